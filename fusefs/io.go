//go:build linux

package fusefs

import (
	"context"
	"errors"
	"io"
	"os"
	"sync/atomic"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/fusefs/internal/pins"
	"github.com/draftfs/draftfs/overlay"
)

// File I/O has no open handles: the kernel never sends OPEN (see the
// package documentation, Opens), so reads, writes and the rest come by
// node and go to the engine by the node's path.

var (
	_ = (gofs.NodeOpener)((*node)(nil))
	_ = (gofs.NodeCreater)((*node)(nil))
	_ = (gofs.NodeReader)((*node)(nil))
	_ = (gofs.NodeWriter)((*node)(nil))
	_ = (gofs.NodeFlusher)((*node)(nil))
	_ = (gofs.NodeFsyncer)((*node)(nil))
	_ = (gofs.NodeLseeker)((*node)(nil))
	_ = (gofs.NodeAllocater)((*node)(nil))
)

// Open implements NodeOpener by declining: ENOSYS makes the kernel open
// files itself from now on, without asking (FUSE's no_open), keeping
// their pages across opens. In passthrough mode it opens.
func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if !n.srv.passthrough {
		return nil, 0, syscall.ENOSYS
	}
	h, fl, errno := n.openIO(ctx, flags&syscall.O_ACCMODE != syscall.O_RDONLY)
	if hook := testHookStale.Load(); errno == syscall.ESTALE && hook != nil {
		(*hook)()
	}
	return h, fl, errno
}

// testHookStale, when set by a test, runs before an open is answered
// ESTALE (see moveAway).
var testHookStale atomic.Pointer[func()]

// Create implements NodeCreater. The new file has no handle either,
// except in passthrough mode (see openIO).
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	key, ok := n.childKey(name)
	if !ok {
		return nil, nil, 0, syscall.ENOENT
	}
	ef := os.O_RDWR | os.O_CREATE
	if flags&syscall.O_TRUNC != 0 {
		ef |= os.O_TRUNC
	}
	if flags&syscall.O_EXCL != 0 {
		ef |= os.O_EXCL
	}
	f, err := n.srv.as(ctx).OpenFile(key, ef, fileMode(mode))
	if err != nil {
		return nil, nil, 0, n.srv.errno("create", err)
	}
	child, _, errno := n.srv.created(ctx, &n.Inode, key, out)
	if errno != 0 {
		f.Close()
		return nil, nil, 0, errno
	}
	if err := f.Close(); err != nil {
		return nil, nil, 0, n.srv.errno("create", err)
	}
	if n.srv.passthrough {
		h, flags, errno := child.Operations().(*node).openIO(ctx, true)
		return child, h, flags, errno
	}
	return child, nil, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH, 0
}

// Flush implements NodeFlusher by declining: ENOSYS makes the kernel
// stop sending FLUSH at every close (writes reach the engine as they are
// made).
func (n *node) Flush(ctx context.Context, f gofs.FileHandle) syscall.Errno {
	return syscall.ENOSYS
}

// Read implements NodeReader.
func (n *node) Read(ctx context.Context, _ gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	var cnt int
	errno := n.use(ctx, "read", os.O_RDONLY, func(f afero.File) error {
		var err error
		cnt, err = f.ReadAt(dest, off)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return err
	})
	if errno != 0 {
		return nil, errno
	}
	return fuse.ReadResultData(dest[:cnt]), 0
}

// Write implements NodeWriter. A write through a descriptor opened
// with O_APPEND goes to the end the file has now, not to off: the kernel
// takes off from the size it last knew, which a change through another
// front end (or another node of the file) only marked stale.
func (n *node) Write(ctx context.Context, _ gofs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	kill, appending := n.srv.writeOf(ctx)
	flag := os.O_RDWR
	if appending {
		flag |= os.O_APPEND
	}
	var cnt int
	errno := n.use(ctx, "write", flag, func(f afero.File) error {
		var err error
		if appending {
			cnt, err = f.Write(data)
		} else {
			cnt, err = f.WriteAt(data, off)
		}
		return err
	})
	if kill && errno == 0 {
		errno = n.killPrivAfterWrite(ctx)
	}
	return uint32(cnt), errno
}

// Fsync implements NodeFsyncer: the content and the draft's metadata
// are made durable.
func (n *node) Fsync(ctx context.Context, _ gofs.FileHandle, flags uint32) syscall.Errno {
	return n.use(ctx, "fsync", os.O_RDONLY, func(f afero.File) error { return f.Sync() })
}

// Lseek implements NodeLseeker for SEEK_DATA and SEEK_HOLE (the kernel
// answers the other whences itself).
func (n *node) Lseek(ctx context.Context, _ gofs.FileHandle, off uint64, whence uint32) (uint64, syscall.Errno) {
	var pos int64
	errno := n.use(ctx, "lseek", os.O_RDONLY, func(f afero.File) error {
		var err error
		pos, err = f.Seek(int64(off), int(whence))
		return err
	})
	return uint64(pos), errno
}

// Allocate implements NodeAllocater.
func (n *node) Allocate(ctx context.Context, _ gofs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	return n.use(ctx, "fallocate", os.O_RDWR, func(f afero.File) error {
		return overlay.Fallocate(f, mode, int64(off), int64(size))
	})
}

// use runs fn on an engine handle of n's file opened with flag (by the
// process behind ctx): the pinned one (see endWriter for O_APPEND), else
// one opened by n's path for fn alone. The kernel does not say when a
// file is closed, and a handle open for writing would keep its file in
// the draft across a commit (see overlay.Draft.Commit), so none stays
// open; reads are rare, as the kernel keeps pages.
func (n *node) use(ctx context.Context, op string, flag int, fn func(afero.File) error) syscall.Errno {
	err := n.Slot().Use(func(f afero.File) error {
		if flag&os.O_APPEND != 0 {
			f = endWriter{f}
		}
		return fn(f)
	})
	if !errors.Is(err, pins.ErrNotPinned) {
		return n.srv.errno(op, err)
	}
	// The open checks what the path holds; no Lstat before it.
	key, ok := n.key()
	if !ok {
		return syscall.ENOENT
	}
	write := flag&(os.O_WRONLY|os.O_RDWR) != 0
	f, err := n.srv.as(ctx).OpenFile(key, flag, 0)
	if err != nil {
		return n.openErrno(op, err)
	}
	err = fn(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if write && err == nil {
		n.changedBehind()
	}
	return n.srv.errno(op, err)
}

// endWriter is the pinned handle for an O_APPEND write: Write goes to
// the file's end without the handle's offset, which requests share (an
// lseek for SEEK_DATA moves it).
type endWriter struct{ afero.File }

func (w endWriter) Write(p []byte) (int, error) {
	fi, err := w.Stat()
	if err != nil {
		return 0, err
	}
	return w.WriteAt(p, fi.Size())
}

// openErrno is the errno of a failed open of n's path by the engine.
func (n *node) openErrno(op string, err error) syscall.Errno {
	if errors.Is(err, overlay.ErrOutside) {
		// The path became a symlink (the engine follows symlinks): the
		// file the kernel meant is gone.
		return syscall.ENOENT
	}
	if e := n.srv.errno(op, err); e != syscall.ENOTDIR {
		return e
	}
	return syscall.ENOENT // a parent is no directory any more
}
