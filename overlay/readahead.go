package overlay

import (
	"errors"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay/beneath"
)

// Reading ahead beside a reader. A disk file that reaches the engine to
// be read is one the kernel had no page of (through a mount, reads the
// kernel's cache serves never come here): a cold read. The files beside
// it are often read next (a compiler reading a package, cat or grep over
// a tree, an agent reading a directory), each a round trip through the
// mount that waits for the disk. So the first cold read in a directory
// has the disk read its small files into the page cache, in the
// background, with posix_fadvise(POSIX_FADV_WILLNEED): the disk reads
// them while the reader works, and their reads then find them cached.
// Nothing is returned or changed (fadvise moves no atime); each file is
// opened beneath the workspace, never through a symlink.

const (
	aheadFileMax  = 1 << 20  // larger files are left to the kernel's own read-ahead
	aheadDirBytes = 16 << 20 // what one directory reads ahead at most
	aheadDirFiles = 512      // the directory entries one pass looks at
	// aheadAgain is how long a directory is not read ahead again: its
	// other files' first reads come here too.
	aheadAgain = time.Second
	aheadQueue = 64 // directories waiting; more are dropped
)

// readahead reads ahead the directories of cold reads (see above).
type readahead struct {
	root  *beneath.Root
	queue chan string
	done  chan struct{}

	// closed is set by stop: what is still queued is dropped, and a
	// read after it queues nothing.
	closed atomic.Bool

	mu   sync.Mutex
	last map[string]time.Time // when each directory was last queued
}

// newReadahead starts reading ahead beneath root; stop ends it.
func newReadahead(root *beneath.Root) *readahead {
	r := &readahead{root: root, queue: make(chan string, aheadQueue), done: make(chan struct{}), last: map[string]time.Time{}}
	go r.run()
	return r
}

// stop ends the reading ahead, waiting for the directory being read.
func (r *readahead) stop() {
	r.mu.Lock()
	r.closed.Store(true)
	close(r.queue)
	r.mu.Unlock()
	<-r.done
}

// note says that the disk file at key is read cold; nil reads nothing
// ahead.
func (r *readahead) note(key string) {
	if r == nil {
		return
	}
	dir := parentOf(key)
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.last[dir]; r.closed.Load() || ok && now.Sub(t) < aheadAgain {
		return
	}
	if len(r.last) >= 4*aheadQueue {
		for d, t := range r.last {
			if now.Sub(t) >= aheadAgain {
				delete(r.last, d)
			}
		}
	}
	select {
	case r.queue <- dir:
		r.last[dir] = now
	default: // busy: this one is left to the kernel
	}
}

func (r *readahead) run() {
	defer close(r.done)
	for dir := range r.queue {
		if !r.closed.Load() {
			r.dir(dir)
		}
	}
}

// dir reads ahead the small regular files of directory key.
func (r *readahead) dir(key string) {
	d, err := r.root.Open(key, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return
	}
	defer d.Close()
	entries, err := d.ReadDir(aheadDirFiles)
	if err != nil && !errors.Is(err, io.EOF) {
		return
	}
	fd := int(d.Fd())
	budget := int64(aheadDirBytes)
	for _, e := range entries {
		if !e.Type().IsRegular() || budget <= 0 {
			continue
		}
		// One file at a time, the mount's requests first: with one Go
		// processor this goroutine would otherwise hold it between files.
		runtime.Gosched()
		budget -= fileAhead(fd, e.Name())
	}
}

// fileAhead has the disk read regular file name in directory dir into
// the page cache, when small; it returns the bytes asked for.
func fileAhead(dir int, name string) int64 {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size == 0 || st.Size > aheadFileMax {
		return 0
	}
	if unix.Fadvise(fd, 0, st.Size, unix.FADV_WILLNEED) != nil {
		return 0
	}
	return st.Size
}
