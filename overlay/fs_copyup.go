//go:build linux

package overlay

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// Copy-up: an entry of the draft made for a file, directory or their
// metadata of a lower layer, before the draft changes it.

// copyUpLocked makes the file at key a draft file and returns its inode:
// its lower content copied (when keep) into a new data file that keeps
// the lower inode number, mode, owner and mtime, and its base recorded.
// Must be called with d.mu held for writing.
func (d *Draft) copyUpLocked(key string, p peeked, keep bool, src Source) (uint64, error) {
	if p.err != nil {
		return 0, p.err
	}
	if p.ino != 0 {
		if !p.n.Data {
			return 0, pathErr("open", key, syscall.EISDIR)
		}
		return p.ino, d.logWriteLocked(key, src)
	}
	fi, err := d.lowerStat(baseOf(key), p.w.lower)
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, pathErr("open", key, syscall.EINVAL)
	}
	var b *base
	var origin string
	if p.w.e != nil { // a renamed file: its base is the path's own
		b, origin = p.w.e.Base, p.w.e.Origin
	} else if b, err = d.recordBase(p.w.lower, true); err != nil {
		return 0, err
	}
	t := &txn{}
	ino, born := fi.attr.Ino, int64(0)
	if !d.inoFree(ino) || fi.attr.Nlink > 1 {
		// Another name of a disk hard link keeps the disk's number.
		ino = d.allocIno(t)
	} else {
		born = d.birthOf(p.w.lower)
	}
	if err := d.copyContent(ino, p.w.lower, keep, fi.ModTime()); err != nil {
		return 0, err
	}
	x, err := d.lowerXattrs(key, p.w.lower)
	if err != nil && !errors.Is(err, fs.ErrNotExist) { // a buffer-only file has none
		return 0, err
	}
	t.putEntry(key, &entry{Kind: kindFile, Ino: ino, Origin: origin, Base: b})
	t.putInode(ino, &inode{Mode: fi.Mode(), Data: true, Uid: int(fi.attr.Uid), Gid: int(fi.attr.Gid), Xattr: x, Born: born})
	t.addLog(LogEntry{Op: "write", Path: key, Source: src})
	return ino, d.finish(t)
}

// logWriteLocked logs a write of key by src, a file the draft holds
// already, unless the last change logged in this step of the timeline
// was this file's by the same source (consecutive writes coalesce).
// Must be called with d.mu held for writing.
func (d *Draft) logWriteLocked(key string, src Source) error {
	if d.lastLog == (logMark{path: key, src: src, capture: d.captures.Load()}) {
		return nil
	}
	t := &txn{}
	t.addLog(LogEntry{Op: "write", Path: key, Source: src})
	return d.finish(t)
}

// copyContent writes a data file with the lower content at lower.
func (d *Draft) copyContent(ino uint64, lower string, keep bool, mtime time.Time) error {
	dst, err := os.OpenFile(d.dataPath(dataName(ino)), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, dataPerm)
	if err != nil {
		return err
	}
	if keep {
		r, _, err := d.openLower(lower)
		if err != nil {
			dst.Close()
			return err
		}
		_, err = io.Copy(dst, r)
		r.Close()
		if err != nil {
			dst.Close()
			return err
		}
	}
	if err := dst.Close(); err != nil {
		return err
	}
	if keep {
		return os.Chtimes(d.dataPath(dataName(ino)), mtime, mtime)
	}
	return nil
}

// copyUpDirLocked gives a lower directory a draft entry, for a change of
// its own metadata; its content keeps showing through. Must be called
// with d.mu held for writing.
func (d *Draft) copyUpDirLocked(key string, p peeked, src Source) (uint64, error) {
	if p.ino != 0 {
		return p.ino, nil
	}
	t := &txn{}
	ino, err := d.dirUpLocked(t, key, p)
	if err != nil {
		return 0, err
	}
	// No log line of its own: the change that needed the copy logs
	// itself (chmod, chown, xattr).
	return ino, d.finish(t)
}

// dirUpLocked stages in t a draft entry and inode for the lower
// directory at key, p, which has none. Must be called with d.mu held
// for writing.
func (d *Draft) dirUpLocked(t *txn, key string, p peeked) (uint64, error) {
	fi, err := d.lowerStat(baseOf(key), p.w.lower)
	if err != nil {
		return 0, err
	}
	ino, born := fi.attr.Ino, int64(0)
	if _, staged := t.inodes[ino]; staged || !d.inoFree(ino) {
		ino = d.allocIno(t)
	} else {
		born = d.birthOf(p.w.lower)
	}
	e := &entry{Kind: kindDir, Ino: ino, Base: &base{Path: p.w.lower, Exists: true, Kind: kindDir, Mode: fi.Mode()}}
	if p.w.e != nil {
		e.Origin, e.Base = p.w.e.Origin, p.w.e.Base
	} else if lp, _ := d.lowerPathOf(key); lp != p.w.lower {
		e.Origin = p.w.lower
	}
	x, err := d.lowerXattrs(key, p.w.lower)
	if err != nil && !errors.Is(err, fs.ErrNotExist) { // a buffer-only file has none
		return 0, err
	}
	t.putEntry(key, e)
	t.putInode(ino, &inode{Mode: fi.Mode(), Mtime: fi.ModTime().UnixNano(), Atime: fi.attr.Atime.UnixNano(),
		Ctime: fi.attr.Ctime.UnixNano(), Uid: int(fi.attr.Uid), Gid: int(fi.attr.Gid), Xattr: x, Born: born})
	return ino, nil
}

// metaUpLocked gives a lower symlink or special file, an object that
// is all metadata, a draft inode. Must be called with d.mu held for
// writing.
func (d *Draft) metaUpLocked(key string, p peeked, src Source) (uint64, error) {
	if p.ino != 0 {
		return p.ino, nil
	}
	fi, err := d.lowerStat(baseOf(key), p.w.lower)
	if err != nil {
		return 0, err
	}
	var target string
	if fi.Mode()&fs.ModeSymlink != 0 {
		if target, err = d.readlinkPeeked(key, p); err != nil {
			return 0, err
		}
	}
	var b *base
	var origin string
	if p.w.e != nil {
		b, origin = p.w.e.Base, p.w.e.Origin
	} else if b, err = d.recordBase(p.w.lower, true); err != nil {
		return 0, err
	}
	t := &txn{}
	ino := d.allocIno(t)
	t.putEntry(key, &entry{Kind: kindOf(fi.Mode()), Ino: ino, Origin: origin, Base: b})
	t.putInode(ino, &inode{Mode: fi.Mode(), Target: target, Rdev: fi.attr.Rdev,
		Mtime: fi.ModTime().UnixNano(), Atime: fi.attr.Atime.UnixNano(), Ctime: fi.attr.Ctime.UnixNano(),
		Uid: int(fi.attr.Uid), Gid: int(fi.attr.Gid)})
	t.addLog(LogEntry{Op: "write", Path: key, Source: src})
	return ino, d.finish(t)
}

// diskDirUpLocked stages in t a draft inode for the disk directory at
// key, which the draft has no entry for; 0 when key is not a directory
// on disk (a directory only an editor has keeps showing as one). Must
// be called with d.mu held for writing.
func (d *Draft) diskDirUpLocked(t *txn, key string) uint64 {
	p := d.peek(key)
	if p.err != nil || !p.w.hasLower {
		return 0
	}
	if fi, err := d.diskLstat(p.w.lower); err != nil || !fi.IsDir() {
		return 0
	}
	ino, err := d.dirUpLocked(t, key, p)
	if err != nil {
		return 0 // the disk's times show, as before
	}
	return ino
}
