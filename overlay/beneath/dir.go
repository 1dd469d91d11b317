//go:build linux

package beneath

import (
	"io/fs"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Dir is a directory beneath a Root, held open so that many files in it
// are made and renamed by name without resolving the directory's path
// again for each (a commit of a thousand files in one directory opens
// it once). The names given are single elements, never
// followed if a symlink, so nothing reaches outside the directory; the
// directory itself is the one that was beneath the root when it was
// opened.
type Dir struct {
	fd  int
	key string // read only: the directory's key
	abs string // read only: its absolute path, for errors
}

// OpenDir opens directory key beneath the root.
func (r *Root) OpenDir(key string) (*Dir, error) {
	fd, err := openat(r.fd, key, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: r.abs(key), Err: err}
	}
	return &Dir{fd: fd, key: key, abs: r.abs(key)}, nil
}

// Key is the directory's key below its root.
func (d *Dir) Key() string { return d.key }

// Close closes the directory.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// element refuses a name that is not one element of the directory.
func (d *Dir) element(op, name string) error {
	if !oneElement(name) {
		return &fs.PathError{Op: op, Path: d.abs + "/" + name, Err: unix.EXDEV}
	}
	return nil
}

// oneElement reports whether name is one element of a directory, which
// an *at call cannot take out of it.
func oneElement(name string) bool {
	return name != "" && name != "." && name != ".." && strings.IndexByte(name, '/') < 0
}

// Open opens name in the directory with open(2)'s flags; a symlink is
// refused with ELOOP.
func (d *Dir) Open(name string, flags int, perm fs.FileMode) (*os.File, error) {
	if err := d.element("open", name); err != nil {
		return nil, err
	}
	for {
		fd, err := unix.Openat(d.fd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, UnixMode(perm)&0o7777)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: d.abs + "/" + name, Err: err}
		}
		return os.NewFile(uintptr(fd), d.abs+"/"+name), nil
	}
}

// Rename renames from to to, both in the directory.
func (d *Dir) Rename(from, to string) error {
	if err := d.element("rename", from); err != nil {
		return err
	}
	if err := d.element("rename", to); err != nil {
		return err
	}
	err := unix.Renameat(d.fd, from, d.fd, to)
	for err == unix.EINTR {
		err = unix.Renameat(d.fd, from, d.fd, to)
	}
	if err != nil {
		return &fs.PathError{Op: "rename", Path: d.abs + "/" + from, Err: err}
	}
	return nil
}

// Remove removes the file name (not a directory).
func (d *Dir) Remove(name string) error {
	if err := d.element("remove", name); err != nil {
		return err
	}
	err := unix.Unlinkat(d.fd, name, 0)
	for err == unix.EINTR {
		err = unix.Unlinkat(d.fd, name, 0)
	}
	if err != nil {
		return &fs.PathError{Op: "remove", Path: d.abs + "/" + name, Err: err}
	}
	return nil
}

// LinkFrom makes name in the directory a hard link of fromName in
// directory fromDir, a descriptor from outside the root (neither is
// followed if a symlink).
func (d *Dir) LinkFrom(fromDir int, fromName, name string) error {
	if err := d.element("link", name); err != nil {
		return err
	}
	err := unix.Linkat(fromDir, fromName, d.fd, name, 0)
	for err == unix.EINTR {
		err = unix.Linkat(fromDir, fromName, d.fd, name, 0)
	}
	if err != nil {
		return &fs.PathError{Op: "link", Path: d.abs + "/" + name, Err: err}
	}
	return nil
}

// Lstat describes name in the directory, not followed if a symlink.
func (d *Dir) Lstat(name string) (*unix.Stat_t, error) {
	if err := d.element("lstat", name); err != nil {
		return nil, err
	}
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	for err == unix.EINTR {
		err = unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: d.abs + "/" + name, Err: err}
	}
	return &st, nil
}

// MoveOut renames name in the directory to toName in directory toDir, a
// descriptor from outside the root (name is not followed if a symlink).
func (d *Dir) MoveOut(name string, toDir int, toName string) error {
	if err := d.element("rename", name); err != nil {
		return err
	}
	err := unix.Renameat(d.fd, name, toDir, toName)
	for err == unix.EINTR {
		err = unix.Renameat(d.fd, name, toDir, toName)
	}
	if err != nil {
		return &fs.PathError{Op: "rename", Path: d.abs + "/" + name, Err: err}
	}
	return nil
}

// DefaultACL reports whether the directory has a default ACL, which a
// file made in it takes and a file linked into it does not.
func (d *Dir) DefaultACL() (bool, error) {
	// An O_PATH descriptor reads no attribute itself; its /proc name does.
	_, err := unix.Getxattr("/proc/self/fd/"+strconv.Itoa(d.fd), "system.posix_acl_default", nil)
	switch err {
	case nil:
		return true, nil
	case unix.ENODATA, unix.EOPNOTSUPP:
		return false, nil
	}
	return false, &fs.PathError{Op: "getxattr", Path: d.abs, Err: err}
}
