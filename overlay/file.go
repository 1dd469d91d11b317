//go:build linux

package overlay

import (
	"io"
	"io/fs"
	"os"
	"path"
	"sync/atomic"
	"syscall"

	"github.com/spf13/afero"
)

// File handles of the merged view. A draft file is the draft's data file
// itself, so reads and writes are plain file I/O; a lower file is the
// disk's file, read only; a buffer file reads the editor's text live;
// a directory lists the merged layers.

var (
	_ afero.File         = (*dataFile)(nil)
	_ afero.File         = (*lowerFile)(nil)
	_ afero.File         = (*dirFile)(nil)
	_ fs.ReadDirFile     = (*dirFile)(nil)
	_ io.ReadWriteSeeker = (*dataFile)(nil)
)

// badHandle is the error of a handle used against its open mode.
func badHandle(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: syscall.EBADF}
}

// dataFile is an open draft file.
type dataFile struct {
	*os.File
	name string
	d    *Draft
	key  string
	ino  uint64
	src  Source
	// announced: the first write was published at once; dirty: writes
	// since, published on Sync or Close.
	announced atomic.Bool
	dirty     atomic.Bool
	writer    bool // counted in d.writers until Close
	// logged is d.captures when this handle's writes were last logged
	// (see Draft.captures).
	logged atomic.Uint64
}

func (f *dataFile) Name() string { return f.name }

func (f *dataFile) changed() {
	if !f.announced.Swap(true) {
		f.publish()
		return
	}
	f.dirty.Store(true)
}

func (f *dataFile) publish() {
	f.d.w.feed.publish(Change{Draft: f.d.name, Path: f.key, Kind: ChangeWrite, Source: f.src})
}

// logAgain logs a write of the handle's file when the timeline captured
// the draft since its writes were last logged: what it writes now is
// the next step's change. Called after the write, so that a write the
// capture may have missed is logged in the next step.
func (f *dataFile) logAgain() error {
	d := f.d
	if !f.writer || f.key == "" || f.logged.Load() == d.captures.Load() {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.captures.Load()
	if e := d.entries[f.key]; e != nil && e.Ino == f.ino { // else moved or gone: that was logged
		if err := d.logWriteLocked(f.key, f.src); err != nil {
			return err
		}
	}
	f.logged.Store(c)
	return nil
}

func (f *dataFile) Write(p []byte) (int, error) {
	f.changed()
	n, err := f.File.Write(p)
	if err == nil {
		err = f.logAgain()
	}
	return n, err
}

func (f *dataFile) WriteAt(p []byte, off int64) (int, error) {
	f.changed()
	n, err := f.File.WriteAt(p, off)
	if err == nil {
		err = f.logAgain()
	}
	return n, err
}

func (f *dataFile) WriteString(s string) (int, error) { return f.Write([]byte(s)) }

func (f *dataFile) Truncate(size int64) error {
	f.changed()
	if err := f.File.Truncate(size); err != nil {
		return err
	}
	return f.logAgain()
}

// Sync makes the content and the draft's metadata durable.
func (f *dataFile) Sync() error {
	if err := f.File.Sync(); err != nil {
		return err
	}
	if f.dirty.Swap(false) {
		f.publish()
	}
	return f.d.sync()
}

func (f *dataFile) Close() error {
	err := f.File.Close()
	if err == nil { // not closed before
		f.d.releaseFile(f.ino)
	}
	if f.writer && err == nil {
		f.d.mu.Lock()
		if f.d.writers[f.ino]--; f.d.writers[f.ino] <= 0 {
			delete(f.d.writers, f.ino)
		}
		f.d.mu.Unlock()
	}
	if f.dirty.Swap(false) {
		f.publish()
	}
	return err
}

func (f *dataFile) Stat() (fs.FileInfo, error) {
	return named(f.name)(f.d.handleInfo(baseOf(f.key), f.ino, f.File))
}

// named returns a function that names an info of a handle after the name
// it was opened by, as os.File.Stat does (a symlink's, not its target's).
func named(openName string) func(fs.FileInfo, error) (fs.FileInfo, error) {
	return func(fi fs.FileInfo, err error) (fs.FileInfo, error) {
		if i, ok := fi.(*fileInfo); ok && err == nil {
			i.name = path.Base("/" + clean(openName))
		}
		return fi, err
	}
}

// handleInfo describes the draft inode ino open as fd, also after its
// last name went (link count 0).
func (d *Draft) handleInfo(name string, ino uint64, fd *os.File) (fs.FileInfo, error) {
	n, nlink, ok := d.inodeOf(ino)
	if !ok {
		n = inode{Mode: 0o644, Data: true}
	}
	fi, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	i := &fileInfo{name: name, size: fi.Size(), mode: n.Mode, mtime: fi.ModTime(),
		attr: Attr{Ino: ino, Nlink: uint32(nlink), Uid: uint32(n.Uid), Gid: uint32(n.Gid)}}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		i.attr.Atime, i.attr.Ctime, i.attr.Blocks = timeOf(st.Atim), n.ctime(timeOf(st.Ctim)), st.Blocks
	}
	return i, nil
}

func (f *dataFile) Readdir(int) ([]fs.FileInfo, error) { return nil, badDir(f.name) }
func (f *dataFile) Readdirnames(int) ([]string, error) { return nil, badDir(f.name) }

func badDir(name string) error { return &fs.PathError{Op: "readdir", Path: name, Err: syscall.ENOTDIR} }

// osFile finds the OS file under an afero handle of the disk layer.
func osFile(f afero.File) (*os.File, bool) {
	switch v := f.(type) {
	case *os.File:
		return v, true
	case *afero.BasePathFile:
		return osFile(v.File)
	}
	return nil, false
}
