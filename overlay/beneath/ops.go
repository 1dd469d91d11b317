//go:build linux

package beneath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The changes and lookups of a Root, each beneath it.

// Lstat describes key without following a final symlink.
func (r *Root) Lstat(key string) (fs.FileInfo, error) {
	fd, err := openat(r.fd, key, unix.O_PATH, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: r.abs(key), Err: err}
	}
	defer unix.Close(fd)
	return statFd(fd, key)
}

// statFd describes an open descriptor, named after key's last element.
func statFd(fd int, key string) (fs.FileInfo, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: key, Err: err}
	}
	name := key[strings.LastIndexByte(key, '/')+1:]
	if name == "" {
		name = "."
	}
	return &fileInfo{name: name, st: st}, nil
}

// LstatAt describes name, one element of the open directory dir,
// without following it if it is a symlink: what Lstat of the directory's
// key joined with name says, without walking the path again. A name that
// is not one element is refused with EXDEV, as a path leaving the root.
func LstatAt(dir *os.File, name string) (fs.FileInfo, error) {
	if !oneElement(name) {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: unix.EXDEV}
	}
	sc, err := dir.SyscallConn()
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if cerr := sc.Control(func(fd uintptr) {
		for {
			err = unix.Fstatat(int(fd), name, &st, unix.AT_SYMLINK_NOFOLLOW)
			if err != unix.EINTR {
				return
			}
		}
	}); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: filepath.Join(dir.Name(), name), Err: err}
	}
	// Both packages declare the kernel's struct stat of this
	// architecture (same size, checked below): Sys stays *syscall.Stat_t,
	// as os's and Lstat's.
	return &fileInfo{name: name, st: *(*syscall.Stat_t)(unsafe.Pointer(&st))}, nil
}

var _ [unsafe.Sizeof(unix.Stat_t{}) - unsafe.Sizeof(syscall.Stat_t{})]byte
var _ [unsafe.Sizeof(syscall.Stat_t{}) - unsafe.Sizeof(unix.Stat_t{})]byte

// Stat describes key, following a final symlink as long as it leads to
// something beneath the root.
func (r *Root) Stat(key string) (fs.FileInfo, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	k := key
	if k == "" {
		k = "."
	}
	fd, err := unix.Openat2(r.fd, k, &how)
	for err == unix.EAGAIN || err == unix.EINTR {
		fd, err = unix.Openat2(r.fd, k, &how)
	}
	if err == unix.ENOSYS || err == unix.EPERM {
		// No openat2: a final symlink is not followed.
		return r.Lstat(key)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: r.abs(key), Err: err}
	}
	defer unix.Close(fd)
	return statFd(fd, key)
}

// Mkdir makes directory key.
func (r *Root) Mkdir(key string, perm fs.FileMode) error {
	return r.at("mkdir", key, func(dir int, name string) error {
		return unix.Mkdirat(dir, name, UnixMode(perm)&0o7777)
	})
}

// MkdirAll makes directory key and its missing parents; an existing
// symlink on the way is an error (ELOOP), never followed.
func (r *Root) MkdirAll(key string, perm fs.FileMode) error {
	fd, err := openat(r.fd, key, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err == nil {
		unix.Close(fd)
		return nil
	}
	if !errors.Is(err, unix.ENOENT) || key == "" {
		return &fs.PathError{Op: "mkdir", Path: r.abs(key), Err: err}
	}
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		if err := r.MkdirAll(key[:i], perm); err != nil {
			return err
		}
	}
	err = r.Mkdir(key, perm)
	if errors.Is(err, fs.ErrExist) {
		if fi, serr := r.Lstat(key); serr == nil && fi.IsDir() {
			return nil
		}
	}
	return err
}

// Remove removes the file or empty directory key.
func (r *Root) Remove(key string) error {
	return r.at("remove", key, func(dir int, name string) error {
		err := unix.Unlinkat(dir, name, 0)
		if err == unix.EISDIR || err == unix.EPERM {
			if err2 := unix.Unlinkat(dir, name, unix.AT_REMOVEDIR); err2 != unix.ENOTDIR {
				return err2
			}
		}
		return err
	})
}

// RemoveAll removes key and everything below it; nothing at key is not
// an error. Directories are entered by descriptor, never through a
// symlink.
func (r *Root) RemoveAll(key string) error {
	return r.at("removeall", key, func(dir int, name string) error {
		err := removeAllAt(dir, name)
		if err == unix.ENOENT {
			return nil
		}
		return err
	})
}

func removeAllAt(dir int, name string) error {
	err := unix.Unlinkat(dir, name, 0)
	if err != unix.EISDIR && err != unix.EPERM {
		return err
	}
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	for {
		names, err := f.Readdirnames(1024)
		for _, n := range names {
			if err := removeAllAt(fd, n); err != nil && err != unix.ENOENT {
				return err
			}
		}
		if err != nil || len(names) == 0 {
			break
		}
	}
	return unix.Unlinkat(dir, name, unix.AT_REMOVEDIR)
}

// Rename renames from to to, both beneath the root.
func (r *Root) Rename(from, to string) error {
	return r.at("rename", from, func(fromDir int, fromName string) error {
		return r.at("rename", to, func(toDir int, toName string) error {
			return unix.Renameat(fromDir, fromName, toDir, toName)
		})
	})
}

// Link makes to a hard link of from; neither is followed if a symlink.
func (r *Root) Link(from, to string) error {
	return r.at("link", from, func(fromDir int, fromName string) error {
		return r.at("link", to, func(toDir int, toName string) error {
			return unix.Linkat(fromDir, fromName, toDir, toName, 0)
		})
	})
}

// Symlink makes key a symlink to target.
func (r *Root) Symlink(target, key string) error {
	return r.at("symlink", key, func(dir int, name string) error {
		return unix.Symlinkat(target, dir, name)
	})
}

// Mknod makes key a FIFO, a socket or a device node (mode's type bits)
// with exactly mode's permission bits: mknod(2) applies the umask.
func (r *Root) Mknod(key string, mode fs.FileMode, dev uint64) error {
	err := r.at("mknod", key, func(dir int, name string) error {
		return unix.Mknodat(dir, name, UnixMode(mode)&unix.S_IFMT|0o600, int(dev))
	})
	if err != nil {
		return err
	}
	return r.Chmod(key, mode)
}

// Readlink reads the symlink key.
func (r *Root) Readlink(key string) (string, error) {
	var out string
	err := r.at("readlink", key, func(dir int, name string) error {
		for size := 256; ; size *= 2 {
			buf := make([]byte, size)
			n, err := unix.Readlinkat(dir, name, buf)
			if err != nil {
				return err
			}
			if n < size {
				out = string(buf[:n])
				return nil
			}
		}
	})
	return out, err
}

// Chmod sets key's mode; a symlink is refused (ELOOP), never followed.
func (r *Root) Chmod(key string, mode fs.FileMode) error {
	return r.byPath("chmod", key, func(p string) error {
		return unix.Chmod(p, UnixMode(mode)&0o7777)
	})
}

// Lchown sets key's owner without following a symlink.
func (r *Root) Lchown(key string, uid, gid int) error {
	if key == "" {
		return unix.Fchownat(r.fd, "", uid, gid, unix.AT_EMPTY_PATH)
	}
	return r.at("lchown", key, func(dir int, name string) error {
		return unix.Fchownat(dir, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
	})
}

// Lchtimes sets key's times without following a symlink.
func (r *Root) Lchtimes(key string, atime, mtime time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	if key == "" {
		return r.byPath("chtimes", key, func(p string) error { return unix.UtimesNano(p, ts) })
	}
	return r.at("chtimes", key, func(dir int, name string) error {
		return unix.UtimesNanoAt(dir, name, ts, unix.AT_SYMLINK_NOFOLLOW)
	})
}

// Setxattr sets an extended attribute of key; a symlink is refused.
func (r *Root) Setxattr(key, attr string, value []byte) error {
	return r.byPath("setxattr", key, func(p string) error {
		return unix.Setxattr(p, attr, value, 0)
	})
}

// Listxattr lists key's extended attributes into buf, as listxattr(2).
func (r *Root) Listxattr(key string, buf []byte) (int, error) {
	var n int
	err := r.byPath("listxattr", key, func(p string) (err error) {
		n, err = unix.Listxattr(p, buf)
		return err
	})
	return n, err
}

// Getxattr reads an extended attribute of key into buf, as getxattr(2).
func (r *Root) Getxattr(key, attr string, buf []byte) (int, error) {
	var n int
	err := r.byPath("getxattr", key, func(p string) (err error) {
		n, err = unix.Getxattr(p, attr, buf)
		return err
	})
	return n, err
}

// byPath runs fn on a /proc/self/fd name of key opened beneath the root:
// for the calls that have no *at form which leaves a symlink alone. The
// descriptor pins what was resolved, so fn changes that and nothing else.
func (r *Root) byPath(op, key string, fn func(p string) error) error {
	fd, err := openat(r.fd, key, unix.O_PATH, 0)
	if err != nil {
		return &fs.PathError{Op: op, Path: r.abs(key), Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &fs.PathError{Op: op, Path: r.abs(key), Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return &fs.PathError{Op: op, Path: r.abs(key), Err: unix.ELOOP}
	}
	err = fn(fmt.Sprintf("/proc/self/fd/%d", fd))
	for err == unix.EINTR {
		err = fn(fmt.Sprintf("/proc/self/fd/%d", fd))
	}
	if err != nil {
		return &fs.PathError{Op: op, Path: r.abs(key), Err: err}
	}
	return nil
}
