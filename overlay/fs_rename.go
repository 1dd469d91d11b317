//go:build linux

package overlay

import (
	"errors"
	"io/fs"
	"syscall"
	"time"
)

// RenameFlags are rename2(2)'s flags.
type RenameFlags uint32

// Rename flags.
const (
	RenameNoReplace RenameFlags = 1 << iota // fail with EEXIST if the target exists
	RenameExchange                          // swap the two paths atomically
)

// Rename implements afero.Fs with rename(2)'s semantics: files and whole
// directories move in O(1) (never EXDEV), and a rename over an existing
// file or empty directory replaces it.
func (f *Fs) Rename(oldname, newname string) error {
	return f.Rename2(oldname, newname, 0)
}

// Rename2 is Rename with rename2(2)'s flags.
func (f *Fs) Rename2(oldname, newname string, flags RenameFlags) error {
	src, dst := clean(oldname), clean(newname)
	d := f.d
	d.mu.Lock()
	err := d.renameLocked(src, dst, flags, f.src)
	d.mu.Unlock()
	if err == nil {
		d.w.feed.publish(Change{Draft: d.name, Path: dst, From: src, Kind: ChangeRename, Source: f.src})
	}
	return err
}

// renameLocked must be called with d.mu held for writing.
func (d *Draft) renameLocked(src, dst string, flags RenameFlags, source Source) error {
	if src == "" || dst == "" {
		return pathErr("rename", src, syscall.EBUSY)
	}
	// The checks come in the order Linux makes them (do_renameat2, then
	// vfs_rename), so callers see the errno a local file system gives.
	for _, k := range []string{src, dst} {
		if err := d.checkParentLocked("rename", k); err != nil {
			return err
		}
	}
	sp := d.peek(src)
	sfi, err := d.describeMeta(src, sp) // a draft file's kind and inode are enough
	if err != nil {
		return err
	}
	dp := d.peek(dst)
	dfi, err := d.describeMeta(dst, dp)
	dstExists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	exchange := flags&RenameExchange != 0
	switch {
	case dstExists && flags&RenameNoReplace != 0:
		return pathErr("rename", dst, syscall.EEXIST)
	case exchange && !dstExists:
		return pathErr("rename", dst, syscall.ENOENT)
	case src != dst && within(dst, src):
		return pathErr("rename", dst, syscall.EINVAL) // into itself
	case src != dst && within(src, dst) && exchange:
		return pathErr("rename", dst, syscall.EINVAL)
	case src != dst && within(src, dst):
		return pathErr("rename", dst, syscall.ENOTEMPTY) // over its own ancestor
	case src == dst:
		return nil
	case dstExists && !sfi.IsDir() && sfi.Sys().(*Attr).Ino == dfi.Sys().(*Attr).Ino:
		return nil // two names of one file: rename(2) does nothing
	case exchange:
	case dstExists && sfi.IsDir() && !dfi.IsDir():
		return pathErr("rename", dst, syscall.ENOTDIR)
	case dstExists && !sfi.IsDir() && dfi.IsDir():
		return pathErr("rename", dst, syscall.EISDIR)
	case dstExists && dfi.IsDir():
		w, err, own := d.peekDir(dst)
		ents, err := d.listDir(dst, w, err, own, false)
		if err != nil {
			return err
		}
		if len(ents) > 0 {
			return pathErr("rename", dst, syscall.ENOTEMPTY)
		}
	}
	t := &txn{}
	srcBase, err := d.baseFor(src)
	if err != nil {
		return err
	}
	dstBase, err := d.baseFor(dst)
	if err != nil {
		return err
	}
	moved, err := d.detach(t, src, sp, sfi.(*fileInfo))
	if err != nil {
		return err
	}
	srcBelow, dstBelow := d.keysBelow(src), d.keysBelow(dst)
	for _, k := range dstBelow {
		t.putEntry(k, nil)
	}
	for _, k := range srcBelow {
		t.putEntry(k, nil)
	}
	if exchange {
		back, err := d.detach(t, dst, dp, dfi.(*fileInfo))
		if err != nil {
			return err
		}
		back.Base = srcBase
		t.putEntry(src, back)
		for _, k := range dstBelow {
			t.putEntry(rebase(k, dst, src), d.entries[k])
		}
	} else if err := d.hideLocked(t, src, srcBase); err != nil {
		return err
	}
	moved.Base = dstBase
	t.putEntry(dst, moved)
	// A rename changes the moved inodes (Linux moves their ctime) and
	// the directories on both sides.
	now := time.Now().UnixNano()
	for _, e := range []*entry{moved, t.entries[src]} {
		switch {
		case e == nil:
		case e.redirect():
			e.Ctime = now // a copy of its own (see detach)
		case e.Ino != 0:
			if n := d.stagedInode(t, e.Ino); n != nil {
				n.Ctime = now
			}
		}
	}
	d.touchDirsLocked(t, src, dst)
	for _, k := range srcBelow {
		t.putEntry(rebase(k, src, dst), d.entries[k])
	}
	t.addLog(LogEntry{Op: "rename", Path: dst, From: src, Source: source})
	return d.finish(t)
}

// checkParentLocked fails as a path lookup does when key's parent is
// missing or not a directory. Must be called with d.mu held.
func (d *Draft) checkParentLocked(op, key string) error {
	pfi, err := d.lstatLocked(parentOf(key))
	if err != nil {
		return err
	}
	if !pfi.IsDir() {
		return pathErr(op, key, syscall.ENOTDIR)
	}
	return nil
}

// detach returns the entry that carries the object at key to another
// path: a copy of its draft entry, or for a lower object a redirect to
// where it lies below (a directory gets its own inode so its metadata can
// change). Must be called with d.mu held for writing.
func (d *Draft) detach(t *txn, key string, p peeked, fi *fileInfo) (*entry, error) {
	if e := p.w.e; e != nil {
		c := *e
		c.Base = nil
		if c.Kind == kindDir && !c.Opaque {
			if p.w.hasLower {
				c.Origin = p.w.lower
			} else {
				c.Opaque = true
			}
		}
		return &c, nil
	}
	if !fi.IsDir() {
		return &entry{Kind: kindOf(fi.Mode()), Origin: p.w.lower}, nil
	}
	ino := fi.attr.Ino
	if !d.inoFree(ino) {
		ino = d.allocIno(t)
	}
	t.putInode(ino, &inode{Mode: fi.Mode(), Mtime: fi.ModTime().UnixNano(), Atime: fi.attr.Atime.UnixNano(),
		Ctime: fi.attr.Ctime.UnixNano(), Uid: int(fi.attr.Uid), Gid: int(fi.attr.Gid)})
	return &entry{Kind: kindDir, Ino: ino, Origin: p.w.lower}, nil
}
