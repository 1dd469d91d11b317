//go:build linux

package overlay

import (
	"errors"
	"io/fs"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Extended attributes: the user namespace only. A draft inode keeps its
// own; a lower object shows the disk's (when the disk layer is the OS),
// and setting one copies the object up first, with the disk's.

const xattrUser = "user."

// Getxattr returns the value of attr on name itself (no symlink follow).
func (f *Fs) Getxattr(name, attr string) ([]byte, error) {
	key := clean(name)
	if !strings.HasPrefix(attr, xattrUser) {
		return nil, pathErr("getxattr", key, unix.ENODATA)
	}
	d := f.d
	d.mu.RLock()
	p := d.peek(key)
	d.mu.RUnlock()
	if p.err != nil {
		return nil, p.err
	}
	if p.ino != 0 {
		v, ok := p.n.Xattr[attr]
		if !ok {
			return nil, pathErr("getxattr", key, unix.ENODATA)
		}
		return append([]byte(nil), v...), nil
	}
	all, err := d.lowerXattrs(key, p.w.lower)
	if err != nil {
		return nil, err
	}
	v, ok := all[attr]
	if !ok {
		return nil, pathErr("getxattr", key, unix.ENODATA)
	}
	return v, nil
}

// Listxattr lists the user attributes of name itself, sorted.
func (f *Fs) Listxattr(name string) ([]string, error) {
	key := clean(name)
	d := f.d
	d.mu.RLock()
	p := d.peek(key)
	d.mu.RUnlock()
	if p.err != nil {
		return nil, p.err
	}
	all := p.n.Xattr
	if p.ino == 0 {
		var err error
		if all, err = d.lowerXattrs(key, p.w.lower); err != nil {
			return nil, err
		}
	}
	out := make([]string, 0, len(all))
	for k := range all {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

// Setxattr sets attr on name itself; flags are unix.XATTR_CREATE or
// unix.XATTR_REPLACE (or 0).
func (f *Fs) Setxattr(name, attr string, value []byte, flags int) error {
	return f.changeXattr(clean(name), attr, func(m map[string][]byte) error {
		_, had := m[attr]
		switch {
		case flags&unix.XATTR_CREATE != 0 && had:
			return syscall.EEXIST
		case flags&unix.XATTR_REPLACE != 0 && !had:
			return unix.ENODATA
		}
		m[attr] = append([]byte(nil), value...)
		return nil
	})
}

// Removexattr removes attr from name itself.
func (f *Fs) Removexattr(name, attr string) error {
	return f.changeXattr(clean(name), attr, func(m map[string][]byte) error {
		if _, had := m[attr]; !had {
			return unix.ENODATA
		}
		delete(m, attr)
		return nil
	})
}

func (f *Fs) changeXattr(key, attr string, change func(map[string][]byte) error) error {
	if !strings.HasPrefix(attr, xattrUser) || len(attr) == len(xattrUser) {
		return pathErr("setxattr", key, syscall.ENOTSUP)
	}
	d := f.d
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.peek(key)
	fi, err := d.describe(key, p)
	if err != nil {
		return err
	}
	var ino uint64
	switch {
	case fi.IsDir():
		ino, err = d.copyUpDirLocked(key, p, f.src)
	case kindOf(fi.Mode()) == kindSpecial:
		// As Linux: user attributes are for files and directories.
		return pathErr("setxattr", key, syscall.EPERM)
	case fi.Mode()&fs.ModeSymlink != 0:
		ino, err = d.metaUpLocked(key, p, f.src)
	default:
		ino, err = d.copyUpLocked(key, p, true, f.src)
	}
	if err != nil {
		return err
	}
	n := *d.inodes[ino]
	m := map[string][]byte{}
	for k, v := range n.Xattr {
		m[k] = v
	}
	if err := change(m); err != nil {
		return pathErr("setxattr", key, Errno(err))
	}
	n.Xattr = m
	n.Ctime = time.Now().UnixNano()
	t := &txn{}
	t.putInode(ino, &n)
	t.addLog(LogEntry{Op: "xattr", Path: key, Source: f.src})
	if err := d.finish(t); err != nil {
		return err
	}
	d.w.feed.publish(Change{Draft: d.name, Path: key, Kind: ChangeAttr, Source: f.src})
	return nil
}

// lowerXattrs reads the user attributes of a lower object (none when the
// disk layer is not the OS's or the file system has none).
func (d *Draft) lowerXattrs(key, lower string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if !d.w.osDisk {
		return out, nil
	}
	buf := make([]byte, 4096)
	n, err := d.w.dir.Listxattr(lower, buf)
	if errors.Is(err, unix.ERANGE) {
		sz, _ := d.w.dir.Listxattr(lower, nil)
		buf = make([]byte, sz)
		n, err = d.w.dir.Listxattr(lower, buf)
	}
	if errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ELOOP) {
		// No attributes: the file system has none, or the file exists
		// only as an editor buffer.
		return out, nil
	}
	if err != nil {
		return nil, pathErr("listxattr", key, Errno(err))
	}
	for _, a := range strings.Split(string(buf[:n]), "\x00") {
		if !strings.HasPrefix(a, xattrUser) {
			continue
		}
		sz, err := d.w.dir.Getxattr(lower, a, nil)
		if err != nil {
			continue
		}
		v := make([]byte, sz)
		if sz, err = d.w.dir.Getxattr(lower, a, v); err == nil {
			out[a] = v[:sz]
		}
	}
	return out, nil
}
