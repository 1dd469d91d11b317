//go:build linux

package overlay

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// dataPerm is the mode of every data file.
const dataPerm = 0o600

// permBits are the mode bits a chmod may set.
const permBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

const writeFlags = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREATE | os.O_TRUNC

// selfUID and selfGID own what the engine makes and what it shows of
// its own: the process's, asked once (os.Getuid asks the kernel at
// every call, a system call per file created).
var selfUID, selfGID = os.Getuid(), os.Getgid()

// Create implements afero.Fs.
func (f *Fs) Create(name string) (afero.File, error) {
	return f.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

// Open implements afero.Fs.
func (f *Fs) Open(name string) (afero.File, error) {
	return f.OpenFile(name, os.O_RDONLY, 0)
}

// OpenFile implements afero.Fs with os.OpenFile's semantics. Opening a
// lower file for writing copies it up into the draft first (without its
// content when O_TRUNC is given).
func (f *Fs) OpenFile(name string, flag int, perm fs.FileMode) (afero.File, error) {
	key := clean(name)
	if flag&writeFlags == 0 {
		if file := f.d.openDisk(key, name); file != nil {
			return file, nil
		}
	}
	if flag&(os.O_CREATE|os.O_EXCL) != os.O_CREATE|os.O_EXCL {
		k, err := f.d.follow(key)
		if err != nil {
			return nil, err
		}
		key = k
	}
	if flag&writeFlags == 0 {
		return f.d.openRead(key, name)
	}
	return f.d.openWrite(key, name, flag, perm, f.src)
}

// openDisk is the fast path of reading what only the disk decides: a
// regular disk file with no draft entry at or above it and no editor
// buffer over it. It opens the file without following a symlink and
// learns what it is from the open descriptor, one lookup instead of an
// lstat and an open. Nil: anything else, or an error, which openRead then
// reports.
func (d *Draft) openDisk(key, name string) afero.File {
	d.mu.RLock()
	w, err := d.locate(key)
	d.mu.RUnlock()
	if err != nil || w.e != nil || !w.hasLower {
		return nil
	}
	if _, ok := d.dirtyBuffer(w.lower); ok {
		return nil
	}
	// O_NONBLOCK: opening a named pipe would wait for a writer.
	fd, err := d.diskOpen(w.lower, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK)
	if err != nil {
		return nil
	}
	fi, err := fd.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		fd.Close()
		return nil
	}
	d.w.ahead.note(w.lower)
	i := infoFrom(baseOf(key), w.lower, fi)
	d.distinct(i, w.lower)
	ino, pin := i.attr.Ino, uint64(0)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if pin = d.pinBirth(st.Ino, ino); pin == 0 {
			ino = st.Ino // the inode that made distinct renumber it went since
		}
	}
	lf := &lowerFile{name: name, key: key, lower: w.lower, ino: ino, pin: pin, d: d, disk: fd, seq: fd, copyAtOpen: d.copyAt(ino)}
	// Held, so a copy-up's data file outlives its names while open.
	d.mu.RLock()
	d.holdFile(lf.ino)
	d.mu.RUnlock()
	return lf
}

func (d *Draft) openRead(key, name string) (afero.File, error) {
	d.mu.RLock()
	p := d.peek(key)
	if p.file() {
		// Opened with d.mu held, so the inode cannot go in between.
		f, err := d.openData(p.n.dataName(p.ino), os.O_RDONLY, 0)
		if err == nil {
			d.holdFile(p.ino)
		}
		d.mu.RUnlock()
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: "/" + key, Err: errors.Unwrap(err)}
		}
		return &dataFile{File: f, name: name, d: d, key: key, ino: p.ino}, nil
	}
	d.mu.RUnlock()
	fi, err := d.describe(key, p)
	if err != nil {
		return nil, err
	}
	switch {
	case fi.IsDir():
		d.mu.RLock()
		d.holdFile(fi.Sys().(*Attr).Ino) // keeps its metadata if it goes
		d.mu.RUnlock()
		return &dirFile{name: name, key: key, d: d, info: fi}, nil
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, pathErr("open", key, syscall.ELOOP)
	case kindOf(fi.Mode()) == kindSpecial:
		return nil, pathErr("open", key, syscall.ENXIO) // the kernel serves its I/O, not the view
	}
	ino := fi.Sys().(*Attr).Ino
	lf := &lowerFile{name: name, key: key, lower: p.w.lower, ino: ino, d: d, copyAtOpen: d.copyAt(ino)}
	// The disk file is opened now, so the handle keeps reading it if the
	// disk deletes or replaces the path; a buffer-only file has none.
	// O_NONBLOCK: opening a named pipe would wait for a writer.
	disk, err := d.diskOpen(p.w.lower, os.O_RDONLY|syscall.O_NONBLOCK)
	if err == nil {
		d.w.ahead.note(p.w.lower)
		lf.disk, lf.seq = disk, disk
		if dfi, err := disk.Stat(); err == nil {
			if st, ok := dfi.Sys().(*syscall.Stat_t); ok {
				lf.pin = d.pinBirth(st.Ino, ino)
			}
		}
	} else if s, ok := d.dirtyBuffer(p.w.lower); ok {
		lf.text, lf.editorOnly = s.Text, true
	} else {
		return nil, &fs.PathError{Op: "open", Path: "/" + key, Err: errors.Unwrap(err)}
	}
	// Held, so a copy-up's data file outlives its names while open. The
	// copy-up may come between the describe above and here: the handle
	// then reads the disk, as one opened just before would.
	d.mu.RLock()
	d.holdFile(lf.ino)
	d.mu.RUnlock()
	return lf, nil
}

func (d *Draft) openWrite(key, name string, flag int, perm fs.FileMode, src Source) (afero.File, error) {
	d.mu.Lock()
	p := d.peek(key)
	fi, err := d.describeMeta(key, p)
	var ino uint64
	var fd *os.File
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
	case err != nil && flag&os.O_CREATE == 0:
	case err != nil:
		ino, fd, err = d.createLocked(key, kindFile, perm, "", 0, flag, src)
	case flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		err = pathErr("open", key, syscall.EEXIST)
	case fi.IsDir():
		err = pathErr("open", key, syscall.EISDIR)
	case kindOf(fi.Mode()) == kindSpecial:
		err = pathErr("open", key, syscall.ENXIO) // the kernel serves its I/O, not the view
	default:
		ino, err = d.copyUpLocked(key, p, flag&os.O_TRUNC == 0, src)
	}
	if err == nil && fd == nil {
		// Opened with d.mu held, so the inode cannot go in between.
		fd, err = d.openData(d.inodes[ino].dataName(ino), flag&^(os.O_CREATE|os.O_EXCL), 0)
		if err != nil {
			err = &fs.PathError{Op: "open", Path: "/" + key, Err: errors.Unwrap(err)}
		}
	}
	if err == nil {
		d.addWriter(ino)
		d.holdFile(ino)
	}
	logged := d.captures.Load()
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	f := &dataFile{File: fd, name: name, d: d, key: key, ino: ino, src: src, writer: true}
	f.logged.Store(logged)
	return f, nil
}

// createLocked makes a new object at key, which must not exist: mode's
// type bits say which special file a kindSpecial is, rdev a device
// node's number. A file's data file is returned open with flag (O_EXCL
// aside), or not opened for a flag of noHandle. Must be called with d.mu
// held for writing.
func (d *Draft) createLocked(key string, k kind, mode fs.FileMode, target string, rdev uint64, flag int, src Source) (uint64, *os.File, error) {
	if key == "" {
		return 0, nil, pathErr("create", key, syscall.EEXIST)
	}
	pfi, err := d.lstatLocked(parentOf(key))
	if err != nil {
		return 0, nil, err
	}
	if !pfi.IsDir() {
		return 0, nil, pathErr("create", key, syscall.ENOTDIR)
	}
	b, err := d.baseFor(key)
	if err != nil {
		return 0, nil, err
	}
	var fd *os.File
	t := &txn{}
	ino := d.allocIno(t)
	now := time.Now().UnixNano()
	n := &inode{Mode: mode & permBits, Target: target, Mtime: now, Atime: now, Ctime: now, Uid: selfUID, Gid: selfGID}
	e := &entry{Kind: k, Ino: ino, Base: b}
	op := "create"
	switch k {
	case kindSpecial:
		n.Mode |= mode.Type() & specialTypes
		n.Rdev = rdev
		op = "mknod"
	case kindDir:
		n.Mode |= fs.ModeDir
		e.Opaque = true
		op = "mkdir"
	case kindSymlink:
		n.Mode = fs.ModeSymlink | 0o777
		op = "symlink"
	case kindFile:
		n.Data = true
		// The data file first: a record never names a missing one.
		if flag != noHandle {
			flag = flag&^os.O_EXCL | os.O_CREATE | os.O_TRUNC
		}
		if fd, err = d.newData(n, flag); err != nil {
			return 0, nil, err
		}
		t.made = ino
	}
	t.putEntry(key, e)
	t.putInode(ino, n)
	d.touchDirsLocked(t, key)
	t.addLog(LogEntry{Op: op, Path: key, Source: src})
	if err := d.finish(t); err != nil {
		if fd != nil {
			fd.Close()
		}
		return 0, nil, err
	}
	d.w.feed.publish(Change{Draft: d.name, Path: key, Kind: ChangeCreate, Source: src})
	return ino, fd, nil
}

// finish applies t and then releases the inodes no entry names any more:
// their data files go, or, while handles are open on them, become
// orphans that go with the last handle (see Draft.orphans). Must be
// called with d.mu held for writing.
func (d *Draft) finish(t *txn) error {
	counts := map[uint64]int{}
	for k, e := range t.entries {
		if old := d.entries[k]; old != nil && old.Ino != 0 {
			if _, ok := counts[old.Ino]; !ok {
				counts[old.Ino] = d.links[old.Ino]
			}
			counts[old.Ino]--
		}
		if e != nil && e.Ino != 0 {
			if _, ok := counts[e.Ino]; !ok {
				counts[e.Ino] = d.links[e.Ino]
			}
			counts[e.Ino]++
		}
	}
	// gone are the data files of the inodes released, by number;
	// replaced the ones an inode's new record no longer names (an undo
	// or a rewind puts content back under the inode's number).
	gone := map[uint64]string{}
	var replaced []string
	for ino, tn := range t.inodes {
		if n := d.inodes[ino]; tn != nil && n != nil && n.Data && n.dataName(ino) != tn.dataName(ino) {
			replaced = append(replaced, n.dataName(ino))
		}
	}
	now := time.Now().UnixNano()
	for ino, c := range counts {
		if c > 0 {
			if c != d.links[ino] && ino != t.made {
				// A name more or less: the inode changed.
				if n := d.stagedInode(t, ino); n != nil {
					n.Ctime = now
				}
			}
			continue
		}
		n, named := d.inodes[ino]
		if tn := t.inodes[ino]; tn != nil {
			n = tn
		} else if !named {
			continue
		}
		t.putInode(ino, nil)
		if !d.orphan(ino, n) && n.Data && !t.unlinked[ino] {
			gone[ino] = n.dataName(ino)
		}
	}
	if err := d.apply(t); err != nil {
		return err
	}
	if n := len(t.log); n > 0 {
		d.lastLog = logMark{path: t.log[n-1].Path, src: t.log[n-1].Source.By(t.log[n-1].By), capture: d.captures.Load()}
	}
	for ino, name := range gone {
		d.removeData(ino, name)
	}
	for _, name := range replaced {
		// Unlinked, not reused: a handle may read it still.
		os.Remove(d.dataPath(name))
	}
	return nil
}

// Sync makes every acknowledged change of the draft durable on disk.
func (f *Fs) Sync() error { return f.d.sync() }

// stagedInode returns inode ino as t leaves it, copied into t to be
// changed there; nil when t removes it or no inode has the number. Must
// be called with d.mu held for writing.
func (d *Draft) stagedInode(t *txn, ino uint64) *inode {
	if n, ok := t.inodes[ino]; ok {
		return n
	}
	n, ok := d.inodes[ino]
	if !ok {
		return nil
	}
	c := *n
	t.putInode(ino, &c)
	return &c
}

// touchDirsLocked moves to now, in t, the mtime and ctime of the
// directories holding keys, as making, removing or renaming a name in a
// directory does. A directory of the disk's gets a draft inode for its
// times (only the workspace root, which has no entry, keeps the disk's).
// Must be called with d.mu held for writing.
func (d *Draft) touchDirsLocked(t *txn, keys ...string) {
	now := time.Now().UnixNano()
	for _, k := range keys {
		dir := parentOf(k)
		if k == "" || dir == "" {
			continue
		}
		e, staged := t.entries[dir]
		if !staged {
			e = d.entries[dir]
		}
		ino := uint64(0)
		switch {
		case e != nil && e.Kind == kindDir:
			ino = e.Ino
		case e == nil && !staged:
			ino = d.diskDirUpLocked(t, dir)
		}
		if ino == 0 {
			continue
		}
		if n := d.stagedInode(t, ino); n != nil {
			n.Mtime, n.Ctime = now, now
		}
	}
}
