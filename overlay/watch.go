//go:build linux

package overlay

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

// watcher publishes changes made to the workspace on disk by anything
// but draftfs (an editor's save, git checkout) on the change feed, so
// front ends can drop what they cached. The merged view itself never
// caches the disk, so it is correct without a watcher.
type watcher struct {
	w    *Workspace
	fw   *fsnotify.Watcher
	done chan struct{}
	wg   sync.WaitGroup
}

// newWatcher starts watching; the walk waits for after to close (nil:
// it starts at once).
func newWatcher(w *Workspace, after <-chan struct{}) (*watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	x := &watcher{w: w, fw: fw, done: make(chan struct{})}
	x.wg.Add(2)
	go x.run()
	go x.watchAll(after)
	return x, nil
}

// watchAllHook, when set (tests), runs before the first walk.
var watchAllHook func()

// watchAll watches the whole workspace. It runs beside serving, so that
// opening a workspace does not wait for a walk of every directory (a
// 100,000-file tree took half a second). A change made on disk before
// its directory is watched has no event of its own; the overflow
// published once every directory is watched makes subscribers drop
// everything they cached meanwhile, as for an inotify overflow.
func (x *watcher) watchAll(after <-chan struct{}) {
	defer x.wg.Done()
	if after != nil {
		select {
		case <-after:
		case <-x.done:
			return
		}
	}
	if watchAllHook != nil {
		watchAllHook()
	}
	x.addTree(x.w.root)
	select {
	case <-x.done:
	default:
		x.w.feed.publish(Change{Kind: ChangeDisk, Source: SourceDisk, Overflow: true})
	}
}

// addTree watches dir and every directory below it. Directories that
// cannot be watched (permissions, the inotify limit) are skipped: their
// changes still show, only without an event. Symbolic links are not
// followed. dir may name a file (every create on disk has it called):
// that costs a failed open, and the listing's buffer is made only for a
// directory.
func (x *watcher) addTree(dir string) {
	var buf []byte
	x.addDirs(dir, &buf)
}

// addDirs is addTree, reading directories into *buf, made at the first.
func (x *watcher) addDirs(dir string, buf *[]byte) {
	select {
	case <-x.done: // closing: stop walking
		return
	default:
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	if *buf == nil {
		*buf = make([]byte, 32<<10)
	}
	subs, err := subdirs(fd, *buf)
	unix.Close(fd)
	if err != nil || x.fw.Add(dir) != nil {
		return
	}
	for _, name := range subs {
		x.addDirs(filepath.Join(dir, name), buf)
	}
}

// subdirs lists the directories in the directory open at fd by the
// types getdents gives: filepath.WalkDir made, sorted and returned an
// entry for each file too, several times the CPU of this walk on a
// large tree.
func subdirs(fd int, buf []byte) ([]string, error) {
	var out []string
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			return out, err
		}
		// struct linux_dirent64: ino, off (8 bytes each), reclen (2),
		// type (1), the name and its NUL.
		for off := 0; off+19 <= n; {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			typ := buf[off+18]
			if reclen < 20 || off+reclen > n {
				return out, unix.EIO
			}
			name := unix.ByteSliceToString(buf[off+19 : off+reclen])
			off += reclen
			if name == "." || name == ".." {
				continue
			}
			dir := typ == unix.DT_DIR
			if typ == unix.DT_UNKNOWN { // file systems that do not say
				var st unix.Stat_t
				dir = unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
			}
			if dir {
				out = append(out, name)
			}
		}
	}
}

func (x *watcher) run() {
	defer x.wg.Done()
	for {
		select {
		case <-x.done:
			return
		case ev, ok := <-x.fw.Events:
			if !ok {
				return
			}
			rel, err := filepath.Rel(x.w.root, ev.Name)
			if err != nil || strings.HasPrefix(rel, "..") {
				continue
			}
			if _, temp := commitTempID(filepath.Base(ev.Name)); temp {
				// A commit's own: the views never show it, and the
				// commit publishes the paths it writes.
				continue
			}
			// Published before a new directory is watched: the mounts
			// drop their caches of the path sooner (a checkout creates
			// many). Paced, so that a burst (a commit's renames into
			// place, a checkout) waits for the mounts rather than
			// overflowing their queues, which drops every node the
			// kernel caches.
			x.w.feed.publishPaced([]Change{{Path: clean(rel), Kind: ChangeDisk, Source: SourceDisk}})
			if ev.Has(fsnotify.Create) {
				x.addTree(ev.Name)
			}
		case err, ok := <-x.fw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				x.w.feed.publish(Change{Kind: ChangeDisk, Source: SourceDisk, Overflow: true})
			}
		}
	}
}

func (x *watcher) close() {
	close(x.done)
	x.fw.Close()
	x.wg.Wait()
}
