//go:build linux

package overlay

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

// lowerFile reads what a path held in the lower layers when it was
// opened, read only: the editor's unsaved text while there is one (so a
// buffer pushed after the open shows on the next read), else the disk
// file opened with it. Once the draft copies the object up (the copy
// keeps its inode number), reads go to the draft's copy, as they would
// on one inode; a deletion in the draft leaves the handle reading what
// it had, as an unlinked file does. A file only an editor has, closed
// unsaved, leaves the handle with the text it last read.
type lowerFile struct {
	name  string
	key   string // merged key, for Stat
	lower string
	ino   uint64 // the lower object's inode number
	d     *Draft
	// copyAtOpen is the data file (its inode number) of the draft copy
	// with number ino at the open, named elsewhere or orphaned: another
	// object, since the path showed the disk (see copiedUp); 0: none.
	copyAtOpen uint64
	// pin is the disk number whose recorded birth gave the object number
	// ino, kept while the handle is open (see pinBirth); 0: none.
	pin uint64
	// editorOnly: only an editor had the file at the open (no disk file).
	// Saved since, the file has the disk's number, not ino.
	editorOnly bool

	mu     sync.RWMutex // held for reading by every operation; Close takes it for writing
	closed bool

	src  sync.Mutex // protects the following
	off  int64
	disk afero.File // nil for an editor's file until it is read once saved
	text []byte     // such a file's text as last read
	// seq is the file Read last read from (the disk file when opened)
	// and seqOff its own offset.
	seq    afero.File
	seqOff int64
	data   *os.File // the draft's copy, once there is one
	// dataIno is data's inode number: ino, or savedIno for the copy of
	// the disk file an editor's file was saved to.
	dataIno uint64
	// savedIno is, for a file only an editor had at the open, the inode
	// number of the disk file it was saved to, once read: a copy-up of
	// that file is this handle's too.
	savedIno uint64
}

func (f *lowerFile) Name() string { return f.name }

// backing returns the OS file reads come from while no editor buffer
// hides it.
func (f *lowerFile) backing() (*os.File, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return nil, false
	}
	switch v := f.source().(type) {
	case *os.File:
		return v, true
	case afero.File:
		return osFile(v)
	}
	return nil, false
}

// source is what reads come from now. Must be called with f.mu held
// for reading.
func (f *lowerFile) source() io.ReaderAt {
	f.src.Lock()
	defer f.src.Unlock()
	return f.sourceLocked()
}

// sourceLocked is source for callers holding f.src too.
func (f *lowerFile) sourceLocked() io.ReaderAt {
	if f.data != nil {
		return f.data
	}
	if f.disk == nil && f.savedIno == 0 {
		// Saved since the open, perhaps changed again since: a copy-up
		// of the file saved is this handle's too.
		if fi, err := f.d.diskLstat(f.lower); err == nil && fi.Mode().IsRegular() {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				f.savedIno = st.Ino
			}
		}
	}
	if data, ino := f.copiedUp(); data != nil {
		f.data, f.dataIno = data, ino
		return data
	}
	if s, ok := f.d.dirtyBuffer(f.lower); ok {
		if f.disk == nil {
			f.text = s.Text
		}
		return bytes.NewReader(s.Text)
	}
	if f.disk == nil {
		// The buffer it was is gone: saved to disk, or closed unsaved
		// (the file is gone then, and the handle keeps its last text).
		disk, err := f.d.diskOpen(f.lower, os.O_RDONLY|syscall.O_NONBLOCK)
		if err != nil {
			return bytes.NewReader(f.text)
		}
		f.disk = disk
		if fi, err := disk.Stat(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				f.savedIno = st.Ino
			}
		}
		if data, ino := f.copiedUp(); data != nil {
			// Copied up since the save, before this first read.
			f.data, f.dataIno = data, ino
			return data
		}
	}
	return f.disk
}

// copiedUp opens the draft's copy of the handle's object made since the
// open, if there is one: the draft inode keeps the lower inode number
// (the path's at the open, or the disk file's an editor buffer was saved
// to since), and stays this file's after an unlink (orphaned while
// open). A draft copy that was there at the open (discarded, or moved
// to another path, or put back there by an undo) is not this handle's:
// the path showed the disk. It returns the copy's number too. Must be
// called with f.src held.
func (f *lowerFile) copiedUp() (*os.File, uint64) {
	for _, ino := range []uint64{f.ino, f.savedIno} {
		if ino == 0 {
			continue
		}
		n, _, ok := f.d.inodeOf(ino)
		if !ok || !n.Data {
			continue
		}
		data, err := f.d.openData(n.dataName(ino), os.O_RDONLY, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if ino == f.ino && f.copyAtOpen != 0 && unix.Fstat(int(data.Fd()), &st) == nil && st.Ino == f.copyAtOpen {
			data.Close()
			continue
		}
		return data, ino
	}
	return nil, 0
}

func (f *lowerFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.readAt(p, off)
}

// readAt must be called with f.mu held for reading.
func (f *lowerFile) readAt(p []byte, off int64) (int, error) {
	if f.closed {
		return 0, badHandle("read", f.name)
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: syscall.EINVAL}
	}
	return f.source().ReadAt(p, off)
}

// Read reads at the handle's offset. From a file it is one read(2) at
// the file's own offset, kept in step, where ReadAt would need a second
// call to find the end.
func (f *lowerFile) Read(p []byte) (int, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return 0, badHandle("read", f.name)
	}
	f.src.Lock()
	defer f.src.Unlock()
	r := f.sourceLocked()
	var n int
	var err error
	if file, ok := r.(afero.File); ok {
		if file != f.seq || f.seqOff != f.off {
			if _, err := file.Seek(f.off, io.SeekStart); err != nil {
				return 0, err
			}
			f.seq = file
		}
		n, err = file.Read(p)
		f.seqOff = f.off + int64(n)
	} else if n, err = r.ReadAt(p, f.off); err == io.EOF && n > 0 {
		err = nil
	}
	f.off += int64(n)
	return n, err
}

func (f *lowerFile) Seek(offset int64, whence int) (int64, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return 0, badHandle("seek", f.name)
	}
	switch whence {
	case io.SeekCurrent:
		f.src.Lock()
		offset += f.off
		f.src.Unlock()
	case io.SeekEnd:
		fi, err := f.stat()
		if err != nil {
			return 0, err
		}
		offset += fi.Size()
	case io.SeekStart:
	case unix.SEEK_DATA, unix.SEEK_HOLE:
		pos, err := f.seekData(offset, whence)
		if err != nil {
			return 0, err
		}
		offset = pos
	default:
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: syscall.EINVAL}
	}
	if offset < 0 {
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: syscall.EINVAL}
	}
	f.src.Lock()
	f.off = offset
	f.src.Unlock()
	return offset, nil
}

// seekData is lseek(2)'s SEEK_DATA and SEEK_HOLE from off: an OS file
// knows its holes; other content (an editor's text) has none. Must be
// called with f.mu held for reading.
func (f *lowerFile) seekData(off int64, whence int) (int64, error) {
	f.src.Lock()
	r := f.sourceLocked()
	if file, ok := r.(afero.File); ok {
		if osf, ok := osFile(file); ok {
			defer f.src.Unlock()
			f.seq = nil // the descriptor's offset moves: Read seeks again
			pos, err := unix.Seek(int(osf.Fd()), off, whence)
			if err != nil {
				return 0, &fs.PathError{Op: "seek", Path: f.name, Err: err}
			}
			return pos, nil
		}
	}
	f.src.Unlock()
	fi, err := f.stat()
	if err != nil {
		return 0, err
	}
	switch size := fi.Size(); {
	case off < 0 || off >= size:
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: syscall.ENXIO}
	case whence == unix.SEEK_DATA:
		return off, nil
	default:
		return size, nil
	}
}

func (f *lowerFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return badHandle("close", f.name)
	}
	f.closed = true
	var err error
	if f.disk != nil {
		err = f.disk.Close()
	}
	if f.data != nil {
		if derr := f.data.Close(); err == nil {
			err = derr
		}
	}
	f.d.releaseFile(f.ino)
	f.d.unpinBirth(f.pin)
	return err
}

func (f *lowerFile) Stat() (fs.FileInfo, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return nil, badHandle("stat", f.name)
	}
	return named(f.name)(f.stat())
}

// stat describes the object the handle reads. Must be called with f.mu
// held for reading.
func (f *lowerFile) stat() (fs.FileInfo, error) {
	f.source() // switches to the draft's copy if there is one now
	f.src.Lock()
	data, dataIno := f.data, f.dataIno
	f.src.Unlock()
	if data != nil {
		return f.d.handleInfo(baseOf(f.key), dataIno, data)
	}
	fi, err := f.d.lowerStat(baseOf(f.key), f.lower)
	if err == nil {
		ino := f.ino
		if f.editorOnly {
			ino = 0 // an editor's file gets the disk's number once saved
		}
		if !f.d.lowerNamed(f.lower, ino) {
			fi.attr.Nlink = 0 // unlinked in the draft
		}
		return fi, nil
	}
	if f.disk == nil {
		// An editor's file, closed unsaved since: its text as last seen.
		now := time.Now()
		return &fileInfo{name: baseOf(f.key), size: int64(len(f.text)), mode: 0o644, mtime: now,
			attr: Attr{Ino: f.ino, Uid: uint32(selfUID), Gid: uint32(selfGID), Atime: now, Ctime: now}}, nil
	}
	// Gone from the lower layers (deleted on disk): the open file still is.
	dfi, serr := f.disk.Stat()
	if serr != nil {
		return nil, err
	}
	i := infoFrom(baseOf(f.key), f.lower, dfi)
	i.attr.Ino = f.ino // the number it was opened under
	i.attr.Nlink = 0
	return i, nil
}

func (f *lowerFile) Write([]byte) (int, error)          { return 0, badHandle("write", f.name) }
func (f *lowerFile) WriteAt([]byte, int64) (int, error) { return 0, badHandle("write", f.name) }
func (f *lowerFile) WriteString(string) (int, error)    { return 0, badHandle("write", f.name) }
func (f *lowerFile) Truncate(int64) error {
	return &fs.PathError{Op: "truncate", Path: f.name, Err: syscall.EINVAL} // as ftruncate(2) on a read-only descriptor
}
func (f *lowerFile) Sync() error                        { return nil }
func (f *lowerFile) Readdir(int) ([]fs.FileInfo, error) { return nil, badDir(f.name) }
func (f *lowerFile) Readdirnames(int) ([]string, error) { return nil, badDir(f.name) }

// lowerNamed reports whether the view still shows the lower file at
// lower (inode ino; 0 for a file only an editor has) under some name:
// its own path, where a rename moved it, or below a renamed directory.
func (d *Draft) lowerNamed(lower string, ino uint64) bool {
	same := func(k string) bool {
		fi, err := d.lstat(k)
		if err != nil || !fi.Mode().IsRegular() {
			return false
		}
		if ino != 0 {
			return fi.Sys().(*Attr).Ino == ino
		}
		// A file only an editor has has no number of its own: it is
		// the one shown where the view reads lower itself, not a draft
		// object made at k since.
		d.mu.RLock()
		w, err := d.locate(k)
		d.mu.RUnlock()
		return err == nil && w.hasLower && w.lower == lower && (w.e == nil || w.e.redirect())
	}
	if same(lower) {
		return true // the usual case: still at its own path
	}
	d.mu.RLock()
	var cands []string
	for k, e := range d.entries {
		switch {
		case e.Kind == kindWhiteout || e.Origin == "":
		case e.Origin == lower:
			cands = append(cands, k)
		case e.Kind == kindDir && within(lower, e.Origin):
			cands = append(cands, rebase(lower, e.Origin, k))
		}
	}
	d.mu.RUnlock()
	for _, k := range cands {
		if same(k) {
			return true
		}
	}
	return false
}
