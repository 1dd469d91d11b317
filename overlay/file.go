package overlay

import (
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
	name  string
	d     *Draft
	key   string
	ino   uint64
	src   Source
	wrote atomic.Bool
}

func (f *dataFile) Name() string { return f.name }

func (f *dataFile) OSFile() (*os.File, bool) { return f.File, true }

func (f *dataFile) changed() {
	if !f.wrote.Swap(true) {
		f.d.w.feed.publish(Change{Draft: f.d.name, Path: f.key, Kind: ChangeWrite, Source: f.src})
	}
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
	if f.wrote.Swap(false) {
		f.d.w.feed.publish(Change{Draft: f.d.name, Path: f.key, Kind: ChangeWrite, Source: f.src})
	}
	return f.d.st.sync()
}

func (f *dataFile) Close() error {
	err := f.File.Close()
	if f.wrote.Load() {
		f.d.w.feed.publish(Change{Draft: f.d.name, Path: f.key, Kind: ChangeWrite, Source: f.src})
	}
	return err
}

func (f *dataFile) Stat() (fs.FileInfo, error) {
	f.d.mu.RLock()
	n, ok := f.d.inodes[f.ino]
	var c inode
	if ok {
		c = *n
	}
	nlink := f.d.links[f.ino]
	f.d.mu.RUnlock()
	if !ok {
		// Unlinked while open: the descriptor still describes it.
		c = inode{Mode: 0o644, Data: true}
	}
	fi, err := f.File.Stat()
	if err != nil {
		return nil, err
	}
	i := &fileInfo{name: baseOf(f.key), size: fi.Size(), mode: c.Mode, mtime: fi.ModTime(),
		attr: Attr{Ino: f.ino, Nlink: uint32(nlink), Uid: uint32(c.Uid), Gid: uint32(c.Gid)}}
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

// lowerFile reads the lower content of a path live, read only: the
// editor's unsaved text while there is one, else the disk file, so a
// buffer pushed after the open shows on the next read.
type lowerFile struct {
	name  string
	key   string // merged key, for Stat
	lower string
	d     *Draft

	mu     sync.Mutex // protects the following
	off    int64
	disk   afero.File
	closed bool
}

func (f *lowerFile) Name() string { return f.name }

// OSFile returns the disk file while no editor buffer hides it.
func (f *lowerFile) OSFile() (*os.File, bool) {
	if _, ok := f.d.dirtyBuffer(f.lower); ok {
		return nil, false
	}
	disk, err := f.diskFile()
	if err != nil {
		return nil, false
	}
	return osFile(disk)
}

// diskFile opens the disk file on first use.
func (f *lowerFile) diskFile() (afero.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, badHandle("read", f.name)
	}
	if f.disk == nil {
		disk, err := f.d.w.disk.Open(diskName(f.lower))
		if err != nil {
			return nil, err
		}
		f.disk = disk
	}
	return f.disk, nil
}

func (f *lowerFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: syscall.EINVAL}
	}
	if s, ok := f.d.dirtyBuffer(f.lower); ok {
		if off >= int64(len(s.Text)) {
			return 0, io.EOF
		}
		n := copy(p, s.Text[off:])
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
	disk, err := f.diskFile()
	if err != nil {
		return 0, err
	}
	return disk.ReadAt(p, off)
}

func (f *lowerFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	off := f.off
	f.mu.Unlock()
	n, err := f.ReadAt(p, off)
	f.mu.Lock()
	f.off += int64(n)
	f.mu.Unlock()
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *lowerFile) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch whence {
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		fi, err := f.d.lowerStat(baseOf(f.key), f.lower)
		if err != nil {
			return 0, err
		}
		offset += fi.Size()
	}
	if offset < 0 {
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: syscall.EINVAL}
	}
	f.off = offset
	return offset, nil
}

func (f *lowerFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return badHandle("close", f.name)
	}
	f.closed = true
	if f.disk != nil {
		return f.disk.Close()
	}
	return nil
}

func (f *lowerFile) Stat() (fs.FileInfo, error) { return f.d.lowerStat(baseOf(f.key), f.lower) }

func (f *lowerFile) Write([]byte) (int, error)          { return 0, badHandle("write", f.name) }
func (f *lowerFile) WriteAt([]byte, int64) (int, error) { return 0, badHandle("write", f.name) }
func (f *lowerFile) WriteString(string) (int, error)    { return 0, badHandle("write", f.name) }
func (f *lowerFile) Truncate(int64) error               { return badHandle("truncate", f.name) }
func (f *lowerFile) Sync() error                        { return nil }
func (f *lowerFile) Readdir(int) ([]fs.FileInfo, error) { return nil, badDir(f.name) }
func (f *lowerFile) Readdirnames(int) ([]string, error) { return nil, badDir(f.name) }
