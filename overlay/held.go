//go:build linux

package overlay

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

// Held files: what a front end keeps of a file whose name it is about to
// unlink or rename over while processes may have it open (a FUSE mount:
// the kernel does not say). Whatever layer the file is in, the handle
// goes on reading it after the name goes, and takes writes as a
// descriptor of an unlinked file does: the first copies the file up
// into the draft (a draft file needs no copy), under its name while
// that still names it, else as an orphan, a draft inode no name reaches
// (see Draft.orphans), which goes with the last handle on it. Every
// handle on the object, held or not, follows that copy, so they keep
// sharing content; the disk and the editor never see such writes.

var _ afero.File = (*heldFile)(nil)

// Hold opens the regular file at name (following symlinks, as Open) for
// reading and for writing, without copying it up until the first write
// (see Held files above). A draft file is held by its inode number and
// opened on its first use: a front end holds every file it unlinks, and
// most are never read again (rm -rf).
func (f *Fs) Hold(name string) (afero.File, error) {
	h := &heldFile{d: f.d, name: name, src: f.src}
	if key, err := f.d.follow(clean(name)); err == nil && f.d.holdDraft(key, h) {
		return h, nil
	}
	file, err := f.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	h.f = file
	switch v := file.(type) {
	case *dataFile:
		h.key = v.key
	case *lowerFile:
		h.key = v.key
	default:
		file.Close()
		return nil, pathErr("open", clean(name), syscall.EISDIR)
	}
	return h, nil
}

// holdDraft holds the draft file at key for h, unopened, and reports
// whether there is one.
func (d *Draft) holdDraft(key string, h *heldFile) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	p := d.peek(key)
	if !p.file() {
		return false
	}
	d.holdFile(p.ino) // released by h's Close, or by its handle's once opened
	h.key, h.ino = key, p.ino
	return true
}

// heldFile is a handle opened by Hold.
type heldFile struct {
	d    *Draft
	name string
	key  string
	src  Source
	// mu: I/O holds it shared; the first use's open and the first
	// write's copy-up exclusively.
	mu sync.RWMutex
	f  afero.File // a read-only *dataFile or *lowerFile, until rw; nil until ino is opened
	rw bool       // f is a *dataFile open for writing
	// ino is the draft inode held unopened while f is nil; closed: h
	// was closed before that.
	ino    uint64
	closed bool
}

// open opens the draft file h holds unopened, named or orphaned by
// now, on h's first use (op, which an error names).
func (h *heldFile) open(op string) error {
	h.mu.RLock()
	opened := h.f != nil
	h.mu.RUnlock()
	if opened {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.f != nil:
		return nil
	case h.closed:
		return &fs.PathError{Op: op, Path: h.name, Err: os.ErrClosed}
	}
	d := h.d
	d.mu.RLock()
	defer d.mu.RUnlock()
	fd, err := d.openData(d.dataOf(h.ino), os.O_RDONLY, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: "/" + h.key, Err: errors.Unwrap(err)}
	}
	h.f = &dataFile{File: fd, name: h.name, d: d, key: h.key, ino: h.ino} // holding what Hold held
	return nil
}

func (h *heldFile) Name() string { return h.name }

// writable makes h's handle one open for writing on a draft inode,
// copying the file up first if it is a lower one.
func (h *heldFile) writable() error {
	if err := h.open("write"); err != nil {
		return err
	}
	h.mu.RLock()
	rw := h.rw
	h.mu.RUnlock()
	if rw {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rw {
		return nil
	}
	off, err := h.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return err // closed
	}
	nf, err := h.d.heldWritable(h.f, h.src)
	if err != nil {
		return err
	}
	nf.name, nf.key, nf.src = h.name, h.key, h.src
	if _, err := nf.Seek(off, io.SeekStart); err != nil {
		nf.Close()
		return err
	}
	h.f.Close()
	h.f, h.rw = nf, true
	return nil
}

// heldWritable returns a handle open for writing on the draft inode
// that f, a read-only handle, reads or will read once copied up.
func (d *Draft) heldWritable(f afero.File, src Source) (*dataFile, error) {
	ino := uint64(0)
	switch v := f.(type) {
	case *dataFile:
		ino = v.ino
	case *lowerFile:
		if !v.copied() {
			return d.heldCopy(v, src)
		}
		ino = v.ino
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.openHeldLocked(ino)
}

// openHeldLocked opens draft inode ino, named or orphaned (a handle
// holds it), for writing. Must be called with d.mu held for writing.
func (d *Draft) openHeldLocked(ino uint64) (*dataFile, error) {
	fd, err := d.openData(d.dataOf(ino), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	_, named := d.inodes[ino]
	if named {
		d.addWriter(ino) // a commit keeps its entry, as for any writer
	}
	d.holdFile(ino)
	return &dataFile{File: fd, d: d, ino: ino, writer: named}, nil
}

// copied reports whether f reads a draft copy of its file (see
// sourceLocked).
func (f *lowerFile) copied() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return false
	}
	f.src.Lock()
	defer f.src.Unlock()
	f.sourceLocked()
	return f.data != nil
}

// heldCopy copies the lower file f reads up into the draft and opens
// the copy for writing: under f's name while it names the file still,
// else as an orphan with f's inode number (when no other inode has it),
// which every handle on the number then follows.
func (d *Draft) heldCopy(f *lowerFile, src Source) (*dataFile, error) {
	d.mu.Lock()
	p := d.peek(f.key)
	if p.err == nil && p.ino == 0 && p.w.hasLower && p.w.lower == f.lower {
		if fi, err := d.lowerStat(baseOf(f.key), f.lower); err == nil && fi.attr.Ino == f.ino {
			ino, err := d.copyUpLocked(f.key, p, true, src)
			if err != nil {
				d.mu.Unlock()
				return nil, err
			}
			defer d.mu.Unlock()
			return d.openHeldLocked(ino)
		}
	}
	d.mu.Unlock()

	// Copied outside d.mu: reading f takes it.
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Join(d.dir, "data"), ".held-*") // collectGarbage removes it after a crash
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(tmp, io.NewSectionReader(f, 0, fi.Size()))
	if err == nil {
		err = os.Chtimes(tmp.Name(), fi.ModTime(), fi.ModTime())
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	defer os.Remove(tmp.Name()) // gone by the rename below, unless it failed
	if err != nil {
		return nil, err
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	ino := f.ino
	if c := d.copyAtLocked(ino); c != 0 && c != f.copyAtOpen {
		return d.openHeldLocked(ino) // copied up meanwhile, by another handle say
	}
	if !d.inoFree(ino) {
		t := &txn{}
		ino = d.allocIno(t)
		if err := d.finish(t); err != nil {
			return nil, err
		}
	}
	if err := unix.Renameat(unix.AT_FDCWD, tmp.Name(), d.data, dataName(ino)); err != nil {
		return nil, &fs.PathError{Op: "copy up", Path: f.key, Err: err}
	}
	var uid, gid int
	if a, ok := fi.Sys().(*Attr); ok {
		uid, gid = int(a.Uid), int(a.Gid)
	}
	d.filesMu.Lock()
	d.orphans[ino] = inode{Mode: fi.Mode() & permBits, Data: true, Uid: uid, Gid: gid, Ctime: time.Now().UnixNano()}
	d.filesMu.Unlock()
	nf, err := d.openHeldLocked(ino)
	if err != nil {
		d.filesMu.Lock()
		delete(d.orphans, ino)
		d.filesMu.Unlock()
		os.Remove(d.dataPath(dataName(ino)))
	}
	return nf, err
}

func (h *heldFile) Read(p []byte) (int, error) {
	if err := h.open("read"); err != nil {
		return 0, err
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.f.Read(p)
}

func (h *heldFile) ReadAt(p []byte, off int64) (int, error) {
	if err := h.open("read"); err != nil {
		return 0, err
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.f.ReadAt(p, off)
}

func (h *heldFile) Seek(offset int64, whence int) (int64, error) {
	if err := h.open("seek"); err != nil {
		return 0, err
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.f.Seek(offset, whence)
}

func (h *heldFile) Stat() (fs.FileInfo, error) {
	if err := h.open("stat"); err != nil {
		return nil, err
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return named(h.name)(h.f.Stat())
}

func (h *heldFile) Write(p []byte) (int, error) {
	if err := h.writable(); err != nil {
		return 0, err
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.f.Write(p)
}

func (h *heldFile) WriteAt(p []byte, off int64) (int, error) {
	if err := h.writable(); err != nil {
		return 0, err
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.f.WriteAt(p, off)
}

func (h *heldFile) WriteString(s string) (int, error) { return h.Write([]byte(s)) }

func (h *heldFile) Truncate(size int64) error {
	if err := h.writable(); err != nil {
		return err
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.f.Truncate(size)
}

func (h *heldFile) Sync() error {
	if err := h.open("sync"); err != nil {
		return err
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.f.Sync()
}

func (h *heldFile) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f != nil {
		return h.f.Close()
	}
	if h.closed {
		return &fs.PathError{Op: "close", Path: h.name, Err: os.ErrClosed}
	}
	h.closed = true
	h.d.releaseFile(h.ino)
	return nil
}

func (h *heldFile) Readdir(int) ([]fs.FileInfo, error) { return nil, badDir(h.name) }
func (h *heldFile) Readdirnames(int) ([]string, error) { return nil, badDir(h.name) }

// Fallocate is fallocate(2) on a file handle of the view open for
// writing (a held one copies its file up first): EOPNOTSUPP on any other
// than a draft file's.
func Fallocate(f afero.File, mode uint32, off, size int64) error {
	if h, ok := f.(*heldFile); ok {
		if err := h.writable(); err != nil {
			return err
		}
		h.mu.RLock()
		defer h.mu.RUnlock()
		f = h.f
	}
	df, ok := f.(*dataFile)
	if !ok {
		return &fs.PathError{Op: "fallocate", Path: f.Name(), Err: syscall.EOPNOTSUPP}
	}
	if err := unix.Fallocate(int(df.Fd()), mode, off, size); err != nil {
		return &fs.PathError{Op: "fallocate", Path: f.Name(), Err: err}
	}
	return nil
}

// BackingFile returns the OS file a read-only handle reads now (a disk
// file, a draft's data file), for a front end that has the kernel read
// it directly (FUSE passthrough); false for an editor's text. Writes
// through it would bypass the draft: it is for reading only. A draft's
// data file lent so goes only unlinked, never reused for another file.
func BackingFile(f afero.File) (*os.File, bool) {
	switch v := f.(type) {
	case *dataFile:
		v.d.lent.Store(v.ino, struct{}{})
		return v.File, true
	case *lowerFile:
		return v.backing()
	}
	return nil, false
}
