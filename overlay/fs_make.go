//go:build linux

package overlay

import (
	"errors"
	"io/fs"
	"syscall"
)

// Making names without content: directories, symlinks, hard links.

// Mkdir implements afero.Fs.
func (f *Fs) Mkdir(name string, perm fs.FileMode) error {
	key := clean(name)
	d := f.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.lstatLocked(key); err == nil {
		return pathErr("mkdir", key, syscall.EEXIST)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	_, _, err := d.createLocked(key, kindDir, perm, "", 0, 0, f.src)
	return err
}

// MkdirAll implements afero.Fs as os.MkdirAll does: a path that is a
// directory or a symlink to one is done; one that exists otherwise is
// ENOTDIR, or EEXIST for a dangling symlink.
func (f *Fs) MkdirAll(name string, perm fs.FileMode) error {
	key := clean(name)
	if fi, err := f.Stat(key); err == nil {
		if fi.IsDir() {
			return nil
		}
		return pathErr("mkdir", key, syscall.ENOTDIR)
	}
	if key != "" {
		if err := f.MkdirAll(parentOf(key), perm); err != nil {
			return err
		}
	}
	if err := f.Mkdir(key, perm); err != nil {
		if fi, lerr := f.Lstat(key); lerr == nil && fi.IsDir() {
			return nil // made meanwhile
		}
		return err
	}
	return nil
}

// Symlink creates newname pointing to target.
func (f *Fs) Symlink(target, newname string) error {
	key := clean(newname)
	d := f.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.lstatLocked(key); err == nil {
		return pathErr("symlink", key, syscall.EEXIST)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	_, _, err := d.createLocked(key, kindSymlink, 0o777, target, 0, 0, f.src)
	return err
}

// SymlinkIfPossible implements afero.Linker.
func (f *Fs) SymlinkIfPossible(oldname, newname string) error { return f.Symlink(oldname, newname) }

// Link makes newname a second name of the file oldname: both see the same
// content afterwards.
func (f *Fs) Link(oldname, newname string) error {
	src, dst := clean(oldname), clean(newname)
	d := f.d
	d.mu.Lock()
	defer d.mu.Unlock()
	// In the order of Linux's linkat: the old name, the new one's
	// parent, the new name, then what the old name is.
	p := d.peek(src)
	fi, err := d.describe(src, p)
	if err != nil {
		return err
	}
	if err := d.checkParentLocked("link", dst); err != nil {
		return err
	}
	if _, err := d.lstatLocked(dst); err == nil {
		return pathErr("link", dst, syscall.EEXIST)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if fi.IsDir() {
		return pathErr("link", src, syscall.EPERM)
	}
	var ino uint64
	if fi.Mode().IsRegular() {
		ino, err = d.copyUpLocked(src, p, true, f.src)
	} else {
		ino, err = d.metaUpLocked(src, p, f.src)
	}
	if err != nil {
		return err
	}
	b, err := d.baseFor(dst)
	if err != nil {
		return err
	}
	t := &txn{}
	t.putEntry(dst, &entry{Kind: kindOf(fi.Mode()), Ino: ino, Base: b})
	d.touchDirsLocked(t, dst)
	t.addLog(LogEntry{Op: "link", Path: dst, From: src, Source: f.src})
	if err := d.finish(t); err != nil {
		return err
	}
	d.w.feed.publish(Change{Draft: d.name, Path: dst, Kind: ChangeCreate, Source: f.src},
		Change{Draft: d.name, Path: src, Kind: ChangeAttr, Source: f.src})
	return nil
}
