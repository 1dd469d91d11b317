//go:build linux

package overlay

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Remove implements afero.Fs: a file, a symlink or an empty directory.
// What the lower layers hold there is hidden by a whiteout.
func (f *Fs) Remove(name string) error {
	d := f.d
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.removeLocked(clean(name), true, f.src)
}

// Unlink removes a non-directory (unlink(2)).
func (f *Fs) Unlink(name string) error { return f.removeKind(name, "unlink", false) }

// Rmdir removes an empty directory (rmdir(2)).
func (f *Fs) Rmdir(name string) error { return f.removeKind(name, "rmdir", true) }

// removeKind removes name if it is a directory exactly when dir is set;
// otherwise op fails with EISDIR or ENOTDIR, as unlink(2) and rmdir(2) do.
func (f *Fs) removeKind(name, op string, dir bool) error {
	key := clean(name)
	d := f.d
	d.mu.Lock()
	defer d.mu.Unlock()
	fi, err := d.describeMeta(key, d.peek(key)) // the kind is enough
	if err != nil {
		return err
	}
	if fi.IsDir() != dir {
		errno := syscall.EISDIR
		if dir {
			errno = syscall.ENOTDIR
		}
		return pathErr(op, key, errno)
	}
	return d.removeLocked(key, true, f.src)
}

// RemoveAll implements afero.Fs: the whole tree goes in one change.
func (f *Fs) RemoveAll(name string) error {
	key := clean(name)
	d := f.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.describeMeta(key, d.peek(key)); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	return d.removeLocked(key, false, f.src)
}

// removeLocked removes key and everything below it. Must be called with
// d.mu held for writing.
func (d *Draft) removeLocked(key string, mustBeEmpty bool, src Source) error {
	if key == "" {
		return pathErr("remove", key, syscall.EBUSY)
	}
	fi, err := d.describeMeta(key, d.peek(key))
	if err != nil {
		return err
	}
	if fi.IsDir() && mustBeEmpty {
		w, err, own := d.peekDir(key)
		ents, err := d.listDir(key, w, err, own, false)
		if err != nil {
			return err
		}
		if len(ents) > 0 {
			return pathErr("remove", key, syscall.ENOTEMPTY)
		}
	}
	b, err := d.baseFor(key)
	if err != nil {
		return err
	}
	t := &txn{}
	d.dropBelow(t, key)
	if err := d.hideLocked(t, key, b); err != nil {
		return err
	}
	d.touchDirsLocked(t, key)
	t.addLog(LogEntry{Op: "delete", Path: key, Source: src})
	if err := d.finish(t); err != nil {
		return err
	}
	d.w.feed.publish(Change{Draft: d.name, Path: key, Kind: ChangeRemove, Source: src})
	return nil
}

// dropBelow deletes every entry strictly below key in t. Must be called
// with d.mu held.
func (d *Draft) dropBelow(t *txn, key string) {
	for _, k := range d.keysBelow(key) {
		t.putEntry(k, nil)
	}
}

// keysBelow lists the entries strictly below key, parents first. Must be
// called with d.mu held.
func (d *Draft) keysBelow(key string) []string {
	var out []string
	var walk func(dir string)
	walk = func(dir string) {
		for name := range d.children[dir] {
			k := join(dir, name)
			if _, ok := d.entries[k]; ok {
				out = append(out, k)
			}
			if d.below[k] > 0 {
				walk(k)
			}
		}
	}
	if d.below[key] > 0 {
		walk(key)
	}
	return out
}

// hideLocked puts in t what key becomes once its object is gone: a
// whiteout when lower content would show through, else nothing. Must be
// called with d.mu held.
func (d *Draft) hideLocked(t *txn, key string, b *base) error {
	lp, ok := d.lowerPathOf(key)
	if ok {
		exists, err := d.lowerExists(lp)
		if err != nil {
			return err
		}
		if exists {
			t.putEntry(key, &entry{Kind: kindWhiteout, Base: b})
			return nil
		}
	}
	t.putEntry(key, nil)
	return nil
}

// Attrs is a change of a path's own metadata (setattr); nil fields stay.
type Attrs struct {
	Mode  *fs.FileMode // permission bits
	Uid   *int
	Gid   *int
	Size  *int64
	Atime *time.Time
	Mtime *time.Time
}

// Setattr changes the metadata of name itself, not following a final
// symlink. A lower file is copied up first; a lower directory gets a
// draft entry whose content still shows through.
func (f *Fs) Setattr(name string, a Attrs) error {
	_, err := f.setattr(name, a, false)
	return err
}

// SetattrStat is Setattr returning what Lstat of name gives right after
// the change, read with it (a FUSE SETATTR's reply carries it).
func (f *Fs) SetattrStat(name string, a Attrs) (fs.FileInfo, error) {
	return f.setattr(name, a, true)
}

// setattr is Setattr, and SetattrStat when stat.
func (f *Fs) setattr(name string, a Attrs, stat bool) (fs.FileInfo, error) {
	key := clean(name)
	d := f.d
	d.mu.Lock()
	p := d.peek(key)
	fi, err := d.describeMeta(key, p)
	if err != nil {
		d.mu.Unlock()
		return nil, err
	}
	if sameAttrs(a, fi) {
		// A chmod or chown to what the object has (tar and cp -a
		// restore both on every file they make) changes nothing but
		// the ctime: nothing is copied up or logged.
		d.touchLocked(key, p)
		fi, err = d.describeIf(stat, key)
		d.mu.Unlock()
		// Its ctime moved: what front ends cache of its attributes goes.
		d.w.feed.publish(Change{Draft: d.name, Path: key, Kind: ChangeAttr, Source: f.src})
		return fi, err
	}
	var ino uint64
	switch {
	case fi.IsDir():
		if a.Size != nil {
			err = pathErr("truncate", key, syscall.EISDIR)
			break
		}
		ino, err = d.copyUpDirLocked(key, p, f.src)
	case !fi.Mode().IsRegular(): // a symlink or a special file
		if a.Size != nil {
			err = pathErr("truncate", key, syscall.EINVAL)
			break
		}
		ino, err = d.metaUpLocked(key, p, f.src)
	default:
		keep := a.Size == nil || *a.Size > 0
		ino, err = d.copyUpLocked(key, p, keep, f.src)
	}
	if err == nil {
		err = d.setattrLocked(key, ino, a, f.src)
	}
	if err != nil {
		d.mu.Unlock()
		return nil, err
	}
	fi, err = d.describeIf(stat, key)
	d.mu.Unlock()
	kind := ChangeAttr
	if a.Size != nil {
		kind = ChangeWrite
	}
	d.w.feed.publish(Change{Draft: d.name, Path: key, Kind: kind, Source: f.src})
	return fi, err
}

// describeIf is describe of key as it is now when stat, else nothing.
// d.mu is held.
func (d *Draft) describeIf(stat bool, key string) (fs.FileInfo, error) {
	if !stat {
		return nil, nil
	}
	return d.describe(key, d.peek(key))
}

// sameAttrs reports whether a sets only a mode and owner that fi has.
func sameAttrs(a Attrs, fi fs.FileInfo) bool {
	if a.Size != nil || a.Atime != nil || a.Mtime != nil || a == (Attrs{}) {
		return false
	}
	at := fi.Sys().(*Attr)
	return (a.Uid == nil || uint32(*a.Uid) == at.Uid) &&
		(a.Gid == nil || uint32(*a.Gid) == at.Gid) &&
		(a.Mode == nil || *a.Mode&permBits == fi.Mode()&permBits)
}

// touchLocked moves the ctime of the object at key, p, to now, for a
// chmod or chown that changed nothing else. A lower object's is kept in
// memory only (d.ctimes): the disk is not touched, and nothing needs
// review. A draft inode's goes into the next record the draft writes
// (tar's chmod follows its chown at once) or, failing one, the record
// an fsync, the quiet period or the draft's close writes (see
// ctimeOnly): a record of its own cost tar a log write a file. Must be
// called with d.mu held for writing.
func (d *Draft) touchLocked(key string, p peeked) {
	now := time.Now().UnixNano()
	if p.ino == 0 {
		d.ctimes[key] = now
		return
	}
	c := *d.inodes[p.ino]
	c.Ctime = now
	d.inodes[p.ino] = &c
	d.ctimeOnly[p.ino] = struct{}{}
}

// setattrLocked applies a to a draft inode. Must be called with d.mu held
// for writing.
func (d *Draft) setattrLocked(key string, ino uint64, a Attrs, src Source) error {
	n := *d.inodes[ino]
	// A chmod or chown changes the inode (its ctime) even when it sets
	// what was there, as on Linux.
	changed := a.Mode != nil || a.Uid != nil || a.Gid != nil
	op := "touch" // what the log calls the change: the strongest kind in it
	if a.Uid != nil || a.Gid != nil {
		owner := (a.Uid != nil && *a.Uid != n.Uid) || (a.Gid != nil && *a.Gid != n.Gid)
		if owner {
			changed, op = true, "chown"
		}
		if a.Uid != nil {
			n.Uid = *a.Uid
		}
		if a.Gid != nil {
			n.Gid = *a.Gid
		}
	}
	if a.Mode != nil {
		mode := n.Mode&^permBits | *a.Mode&permBits
		if mode != n.Mode {
			changed, op = true, "chmod"
		}
		n.Mode = mode
	}
	if n.Data {
		d.touchIno(ino) // its size or times: the data file's own
		if a.Size != nil {
			if err := os.Truncate(d.dataPath(n.dataName(ino)), *a.Size); err != nil {
				return &fs.PathError{Op: "truncate", Path: "/" + key, Err: errors.Unwrap(err)}
			}
		}
		if a.Atime != nil || a.Mtime != nil {
			if err := unix.UtimesNanoAt(d.data, n.dataName(ino), utimes(a.Atime, a.Mtime), 0); err != nil {
				return &fs.PathError{Op: "utimes", Path: "/" + key, Err: err}
			}
		}
	} else if a.Atime != nil || a.Mtime != nil {
		if a.Atime != nil {
			n.Atime = a.Atime.UnixNano()
		}
		if a.Mtime != nil {
			n.Mtime = a.Mtime.UnixNano()
		}
		changed = true
	}
	if !changed {
		return nil
	}
	// Every change of an inode moves its ctime; a data file's own
	// changes (size, times) move the data file's.
	n.Ctime = time.Now().UnixNano()
	t := &txn{}
	t.putInode(ino, &n)
	t.addLog(LogEntry{Op: op, Path: key, Source: src})
	return d.finish(t)
}

// utimes are utimensat's times: a nil time is left as it is.
func utimes(atime, mtime *time.Time) []unix.Timespec {
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
	for i, t := range []*time.Time{atime, mtime} {
		if t != nil {
			ts[i] = unix.NsecToTimespec(t.UnixNano())
		}
	}
	return ts
}

// Chmod implements afero.Fs (following symlinks).
func (f *Fs) Chmod(name string, mode fs.FileMode) error {
	key, err := f.d.follow(clean(name))
	if err != nil {
		return err
	}
	return f.Setattr(key, Attrs{Mode: &mode})
}

// Chown implements afero.Fs (following symlinks).
func (f *Fs) Chown(name string, uid, gid int) error {
	key, err := f.d.follow(clean(name))
	if err != nil {
		return err
	}
	a := Attrs{}
	if uid >= 0 {
		a.Uid = &uid
	}
	if gid >= 0 {
		a.Gid = &gid
	}
	return f.Setattr(key, a)
}

// Chtimes implements afero.Fs (following symlinks).
func (f *Fs) Chtimes(name string, atime, mtime time.Time) error {
	key, err := f.d.follow(clean(name))
	if err != nil {
		return err
	}
	return f.Setattr(key, Attrs{Atime: &atime, Mtime: &mtime})
}

// Truncate changes a file's size (following symlinks).
func (f *Fs) Truncate(name string, size int64) error {
	key, err := f.d.follow(clean(name))
	if err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", key, syscall.EINVAL)
	}
	return f.Setattr(key, Attrs{Size: &size})
}
