package overlay

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
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
	_ FileDescriptor     = (*dataFile)(nil)
	_ FileDescriptor     = (*lowerFile)(nil)
	_ io.ReadWriteSeeker = (*dataFile)(nil)
)

// FileDescriptor is implemented by handles backed by an OS file, so a
// front end can hand the descriptor to the kernel (FUSE passthrough).
// Writes made through the descriptor bypass change notification: use it
// only for handles opened read-only, or tell the draft with Sync/Close.
type FileDescriptor interface {
	OSFile() (*os.File, bool)
}

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

	mu   sync.Mutex // protects last
	last inode      // the inode's metadata as last seen, for Stat after unlink
}

func (f *dataFile) Name() string { return f.name }

func (f *dataFile) OSFile() (*os.File, bool) { return f.File, true }

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

func (f *dataFile) Write(p []byte) (int, error) {
	f.changed()
	return f.File.Write(p)
}

func (f *dataFile) WriteAt(p []byte, off int64) (int, error) {
	f.changed()
	return f.File.WriteAt(p, off)
}

func (f *dataFile) WriteString(s string) (int, error) { return f.Write([]byte(s)) }

func (f *dataFile) Truncate(size int64) error {
	f.changed()
	return f.File.Truncate(size)
}

// Sync makes the content and the draft's metadata durable.
func (f *dataFile) Sync() error {
	if err := f.File.Sync(); err != nil {
		return err
	}
	if f.dirty.Swap(false) {
		f.publish()
	}
	return f.d.st.sync()
}

func (f *dataFile) Close() error {
	err := f.File.Close()
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
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.d.handleInfo(baseOf(f.key), f.ino, f.File, &f.last)
}

// handleInfo describes the draft inode ino open as fd. last keeps the
// inode's metadata as last seen, for a handle whose file was unlinked
// since (the inode's record is gone then); the caller serialises its use.
func (d *Draft) handleInfo(name string, ino uint64, fd *os.File, last *inode) (fs.FileInfo, error) {
	d.mu.RLock()
	n, ok := d.inodes[ino]
	var c inode
	if ok {
		c = *n
	}
	nlink := d.links[ino]
	d.mu.RUnlock()
	switch {
	case ok && last != nil:
		*last = c
	case !ok && last != nil && last.Data:
		c = *last
	case !ok:
		c = inode{Mode: 0o644, Data: true}
	}
	fi, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	i := &fileInfo{name: name, size: fi.Size(), mode: c.Mode, mtime: fi.ModTime(),
		attr: Attr{Ino: ino, Nlink: uint32(nlink), Uid: uint32(c.Uid), Gid: uint32(c.Gid)}}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		i.attr.Atime, i.attr.Ctime, i.attr.Blocks = timeOf(st.Atim), timeOf(st.Ctim), st.Blocks
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

// lowerFile reads what a path held in the lower layers when it was
// opened, read only: the editor's unsaved text while there is one (so a
// buffer pushed after the open shows on the next read), else the disk
// file opened with it. Once the draft copies the object up (the copy
// keeps its inode number), reads go to the draft's copy, as they would
// on one inode; a deletion in the draft leaves the handle reading what
// it had, as an unlinked file does.
type lowerFile struct {
	name  string
	key   string // merged key, for Stat
	lower string
	ino   uint64 // the lower object's inode number
	d     *Draft

	mu     sync.RWMutex // held for reading by every operation; Close takes it for writing
	closed bool

	src  sync.Mutex // protects the following
	off  int64
	disk afero.File // nil for a file that was only an editor buffer
	data *os.File   // the draft's copy, once there is one
}

func (f *lowerFile) Name() string { return f.name }

// OSFile returns the OS file reads come from while no editor buffer
// hides it.
func (f *lowerFile) OSFile() (*os.File, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return nil, false
	}
	r, err := f.source()
	if err != nil {
		return nil, false
	}
	switch v := r.(type) {
	case *os.File:
		return v, true
	case afero.File:
		return osFile(v)
	}
	return nil, false
}

// source is what reads come from now. Must be called with f.mu held
// for reading.
func (f *lowerFile) source() (io.ReaderAt, error) {
	f.src.Lock()
	defer f.src.Unlock()
	if f.data != nil {
		return f.data, nil
	}
	f.d.mu.RLock()
	n, ok := f.d.inodes[f.ino]
	copied := ok && n.Data
	f.d.mu.RUnlock()
	if copied {
		if data, err := os.Open(f.d.dataPath(f.ino)); err == nil {
			f.data = data
			return data, nil
		}
	}
	if s, ok := f.d.dirtyBuffer(f.lower); ok {
		return bytes.NewReader(s.Text), nil
	}
	if f.disk == nil {
		// The buffer it was is gone: what the disk has now, if anything.
		disk, err := f.d.w.disk.Open(diskName(f.lower))
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: f.name, Err: errors.Unwrap(err)}
		}
		f.disk = disk
	}
	return f.disk, nil
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
	r, err := f.source()
	if err != nil {
		return 0, err
	}
	return r.ReadAt(p, off)
}

func (f *lowerFile) Read(p []byte) (int, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	f.src.Lock()
	off := f.off
	f.src.Unlock()
	n, err := f.readAt(p, off)
	f.src.Lock()
	f.off += int64(n)
	f.src.Unlock()
	if err == io.EOF && n > 0 {
		err = nil
	}
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
	return err
}

func (f *lowerFile) Stat() (fs.FileInfo, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return nil, badHandle("stat", f.name)
	}
	return f.stat()
}

// stat describes the object the handle reads. Must be called with f.mu
// held for reading.
func (f *lowerFile) stat() (fs.FileInfo, error) {
	if _, err := f.source(); err != nil {
		return nil, err
	}
	f.src.Lock()
	data := f.data
	f.src.Unlock()
	if data != nil {
		return f.d.handleInfo(baseOf(f.key), f.ino, data, nil)
	}
	fi, err := f.d.lowerStat(baseOf(f.key), f.lower)
	if err == nil {
		return fi, nil
	}
	if f.disk == nil {
		return nil, err
	}
	// Gone from the lower layers (deleted on disk): the open file still is.
	dfi, serr := f.disk.Stat()
	if serr != nil {
		return nil, err
	}
	i := infoFrom(baseOf(f.key), f.lower, dfi)
	i.attr.Nlink = 0
	return i, nil
}

func (f *lowerFile) Write([]byte) (int, error)          { return 0, badHandle("write", f.name) }
func (f *lowerFile) WriteAt([]byte, int64) (int, error) { return 0, badHandle("write", f.name) }
func (f *lowerFile) WriteString(string) (int, error)    { return 0, badHandle("write", f.name) }
func (f *lowerFile) Truncate(int64) error               { return badHandle("truncate", f.name) }
func (f *lowerFile) Sync() error                        { return nil }
func (f *lowerFile) Readdir(int) ([]fs.FileInfo, error) { return nil, badDir(f.name) }
func (f *lowerFile) Readdirnames(int) ([]string, error) { return nil, badDir(f.name) }
