//go:build linux

// Package beneath opens and changes files below a directory without ever
// leaving it: every path is resolved by the kernel from a descriptor of
// the directory, refusing "..", absolute names and symlinks on the way
// (openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS; on kernels without
// openat2, a component-by-component walk with O_NOFOLLOW). What a caller
// checked is what it opens: a directory swapped for a symlink between the
// check and the open makes the open fail with ELOOP instead of reaching
// outside.
//
// It is the one containment helper of draftfs: the engine's disk layer
// ([FS]) is built on [Root], and every front end checks a path against
// a directory with [Within].
package beneath

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Within reports whether the clean path p is dir or below it, for
// absolute paths ("/" holds everything) and for relative keys ("" holds
// everything). It looks at names only; opening goes through a [Root].
func Within(p, dir string) bool {
	return dir == "" || dir == "/" || p == dir || strings.HasPrefix(p, dir+"/")
}

// Root is an open directory that paths are resolved beneath.
type Root struct {
	fd   int    // read only: O_PATH descriptor of the directory
	name string // read only: its absolute path, for file names and errors
}

// OpenRoot opens dir (following symlinks in dir itself: it is the
// caller's choice) as a Root.
func OpenRoot(dir string) (*Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(abs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: abs, Err: err}
	}
	return &Root{fd: fd, name: abs}, nil
}

// Close closes the directory descriptor.
func (r *Root) Close() error { return unix.Close(r.fd) }

// Name is the root's absolute path.
func (r *Root) Name() string { return r.name }

// Key cleans a name given relative to the root ("/a/b" and "a/b" alike)
// into a key without a leading slash; "" is the root. ".." cannot climb
// above the root.
func Key(name string) string {
	return strings.TrimPrefix(path.Clean("/"+filepath.ToSlash(name)), "/")
}

// abs is the absolute path of a key, for file names and errors.
func (r *Root) abs(key string) string {
	if key == "" {
		return r.name
	}
	return r.name + "/" + key
}

// noOpenat2 is set once the kernel said it has no openat2 (or a seccomp
// filter hides it); the walk is used from then on.
var noOpenat2 atomic.Bool

// openat opens key beneath the directory fd dir, never following a
// symlink, a ".." out of dir or a mount's magic link. flags gets
// O_NOFOLLOW and O_CLOEXEC; with O_PATH, a final symlink is opened
// itself.
func openat(dir int, key string, flags int, mode uint32) (int, error) {
	flags |= unix.O_NOFOLLOW | unix.O_CLOEXEC
	if key == "" {
		key = "."
	}
	if !noOpenat2.Load() {
		how := unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		for i := 0; ; i++ {
			fd, err := unix.Openat2(dir, key, &how)
			switch {
			case err == unix.EINTR || err == unix.EAGAIN && i < 64:
				// EAGAIN: a rename somewhere on the system raced the
				// walk; the kernel asks to retry.
				continue
			case err == unix.ENOSYS || err == unix.EPERM && i == 0 && probeNoOpenat2():
				noOpenat2.Store(true)
				return walk(dir, key, flags, mode)
			}
			return fd, err
		}
	}
	return walk(dir, key, flags, mode)
}

// probeNoOpenat2 tells a seccomp filter that refuses openat2 with EPERM
// from a real EPERM: openat2 of "." in / must work.
func probeNoOpenat2() bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC})
	if err == nil {
		unix.Close(fd)
		return false
	}
	return true
}

// walk is openat2's resolution done by hand: one component at a time,
// each a directory opened with O_NOFOLLOW from the last.
func walk(dir int, key string, flags int, mode uint32) (int, error) {
	elems := strings.Split(key, "/")
	cur := dir
	defer func() {
		if cur != dir {
			unix.Close(cur)
		}
	}()
	for i, e := range elems {
		if e == ".." || e == "" {
			return -1, unix.EXDEV
		}
		last := i == len(elems)-1
		f, m := unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(0)
		if last {
			f, m = flags, mode
		}
		fd, err := unix.Openat(cur, e, f, m)
		for err == unix.EINTR {
			fd, err = unix.Openat(cur, e, f, m)
		}
		if err == unix.ENOTDIR && !last {
			// O_DIRECTORY|O_NOFOLLOW on a symlink: say what openat2 says.
			var st unix.Stat_t
			if unix.Fstatat(cur, e, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				err = unix.ELOOP
			}
		}
		if err != nil {
			return -1, err
		}
		if cur != dir {
			unix.Close(cur)
		}
		cur = fd
	}
	fd := cur
	cur = dir
	return fd, nil
}

// Open opens key beneath the root with open(2)'s flags. A symlink
// anywhere on the way, the last element too, is refused with ELOOP
// (with O_PATH, a final symlink is opened itself).
func (r *Root) Open(key string, flags int, perm fs.FileMode) (*os.File, error) {
	fd, err := openat(r.fd, key, flags, UnixMode(perm)&0o7777)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: r.abs(key), Err: err}
	}
	return os.NewFile(uintptr(fd), r.abs(key)), nil
}

// parent opens the directory holding key and returns it with key's last
// element. The caller closes the descriptor.
func (r *Root) parent(op, key string) (int, string, error) {
	if key == "" {
		return -1, "", &fs.PathError{Op: op, Path: r.name, Err: unix.EBUSY}
	}
	dir, name := "", key
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		dir, name = key[:i], key[i+1:]
	}
	fd, err := openat(r.fd, dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, "", &fs.PathError{Op: op, Path: r.abs(key), Err: err}
	}
	return fd, name, nil
}

// at runs fn on key's parent directory and last element.
func (r *Root) at(op, key string, fn func(dir int, name string) error) error {
	dir, name, err := r.parent(op, key)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	for {
		err = fn(dir, name)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return &fs.PathError{Op: op, Path: r.abs(key), Err: err}
	}
	return nil
}

// fileInfo is an fs.FileInfo from fstat; Sys is *syscall.Stat_t, as
// os's.
type fileInfo struct {
	name string
	st   syscall.Stat_t
}

func (i *fileInfo) Name() string       { return i.name }
func (i *fileInfo) Size() int64        { return i.st.Size }
func (i *fileInfo) ModTime() time.Time { return time.Unix(i.st.Mtim.Unix()) }
func (i *fileInfo) IsDir() bool        { return i.Mode().IsDir() }
func (i *fileInfo) Sys() any           { return &i.st }
func (i *fileInfo) Mode() fs.FileMode  { return FileMode(i.st.Mode) }
