package fusefs

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

var (
	_ = (gofs.FileReader)((*handle)(nil))
	_ = (gofs.FileWriter)((*handle)(nil))
	_ = (gofs.FileFsyncer)((*handle)(nil))
	_ = (gofs.FileReleaser)((*handle)(nil))
	_ = (gofs.FileLseeker)((*handle)(nil))
	_ = (gofs.FileAllocater)((*handle)(nil))
	_ = (fileHandle)((*handle)(nil))

	_ = (gofs.FilePassthroughFder)(ptHandle{})
	_ = (gofs.FileReleaser)(ptHandle{})
	_ = (fileHandle)(ptHandle{})
)

// fileHandle is what a node asks of its open handles when its path no
// longer names it.
type fileHandle interface {
	stat() (fs.FileInfo, error)
	truncate(size int64) (fs.FileInfo, error)
}

// handle is an open file: an engine handle. Flush is not implemented:
// writes reach the engine as they are made, so opens ask the kernel not
// to send FLUSH (FOPEN_NOFLUSH).
type handle struct {
	n        *node      // read only
	f        afero.File // read only
	osf      *os.File   // read only: the OS file under f, if any
	rw       *os.File   // read only: osf reopened read-write, for a reader's passthrough of a draft file
	writable bool       // read only
	pt       bool       // read only: the kernel serves it by passthrough
	// text is what an open of an editor buffer reads: the text as of the
	// open, so its reads never mix two versions (nil for files).
	text []byte
	sig  uint64 // read only: the content's signature at the open

	mu       sync.RWMutex // operations hold it shared, Release exclusively
	released bool
}

// ptHandle is a handle the kernel reads directly from its OS file. It is
// a type of its own because go-fuse attaches the node's passthrough file
// to every handle that implements FilePassthroughFder.
type ptHandle struct{ *handle }

// PassthroughFd implements FilePassthroughFder.
func (h ptHandle) PassthroughFd() (int, bool) {
	if h.rw != nil {
		return int(h.rw.Fd()), true
	}
	return int(h.osf.Fd()), true
}

// use runs op on the handle unless it was released.
func (h *handle) use(op func() syscall.Errno) syscall.Errno {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.released {
		return syscall.EBADF
	}
	return op()
}

// Read implements FileReader.
func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	var n int
	errno := h.use(func() syscall.Errno {
		if h.text != nil {
			if off < int64(len(h.text)) {
				n = copy(dest, h.text[off:])
			}
			return 0
		}
		var err error
		n, err = h.f.ReadAt(dest, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return h.n.srv.errno("read", err)
		}
		return 0
	})
	if errno != 0 {
		return nil, errno
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// Write implements FileWriter.
func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	var n int
	errno := h.use(func() syscall.Errno {
		var err error
		n, err = h.f.WriteAt(data, off)
		return h.n.srv.errno("write", err)
	})
	return uint32(n), errno
}

// Fsync implements FileFsyncer: the content and the draft's metadata
// are made durable.
func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	return h.use(func() syscall.Errno { return h.n.srv.errno("fsync", h.f.Sync()) })
}

// Release implements FileReleaser.
func (h *handle) Release(ctx context.Context) syscall.Errno {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return syscall.EBADF
	}
	h.released = true
	if h.pt && h.writable {
		// The kernel wrote to the draft file directly: a zero-length
		// write tells the engine the handle wrote, so it publishes the
		// change when the handle closes.
		if fi, err := h.f.Stat(); err == nil && contentSig(fi) != h.sig {
			h.f.Write(nil)
		}
	}
	err := h.closeFiles()
	h.n.released(h)
	return h.n.srv.errno("close", err)
}

// closeFiles closes the engine handle and the passthrough reopen.
func (h *handle) closeFiles() error {
	if h.rw != nil {
		h.rw.Close()
	}
	return h.f.Close()
}

// Lseek implements FileLseeker for SEEK_DATA and SEEK_HOLE (the kernel
// answers the other whences itself): the OS file knows its holes; text
// without one (an editor buffer) has none.
func (h *handle) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	var pos uint64
	errno := h.use(func() syscall.Errno {
		if h.osf != nil {
			p, err := unix.Seek(int(h.osf.Fd()), int64(off), int(whence))
			pos = uint64(p)
			return h.n.srv.errno("lseek", err)
		}
		fi, err := h.f.Stat()
		if err != nil {
			return h.n.srv.errno("lseek", err)
		}
		size := uint64(fi.Size())
		switch {
		case off >= size:
			return syscall.ENXIO
		case whence == unix.SEEK_DATA:
			pos = off
		case whence == unix.SEEK_HOLE:
			pos = size
		default:
			return syscall.EINVAL
		}
		return 0
	})
	return pos, errno
}

// Allocate implements FileAllocater on the draft file under a writable
// handle.
func (h *handle) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	return h.use(func() syscall.Errno {
		if !h.writable || h.osf == nil {
			return syscall.EBADF
		}
		return h.n.srv.errno("fallocate", unix.Fallocate(int(h.osf.Fd()), mode, int64(off), int64(size)))
	})
}

func (h *handle) stat() (fs.FileInfo, error) {
	var fi fs.FileInfo
	var err error
	if errno := h.use(func() syscall.Errno { fi, err = h.f.Stat(); return 0 }); errno != 0 {
		return nil, errno
	}
	return fi, err
}

func (h *handle) truncate(size int64) (fs.FileInfo, error) {
	var fi fs.FileInfo
	var err error
	if errno := h.use(func() syscall.Errno {
		if err = h.f.Truncate(size); err == nil {
			fi, err = h.f.Stat()
		}
		return 0
	}); errno != 0 {
		return nil, errno
	}
	return fi, err
}
