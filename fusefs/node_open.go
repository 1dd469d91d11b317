package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/spf13/afero"
	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay"
)

var (
	_ = (gofs.NodeOpener)((*node)(nil))
	_ = (gofs.NodeCreater)((*node)(nil))
)

// fileID identifies an OS file.
type fileID struct{ dev, ino uint64 }

func idOf(f *os.File) (fileID, bool) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return fileID{}, false
	}
	return fileID{dev: st.Dev, ino: st.Ino}, true
}

// engineFlags turns open(2) flags from the kernel into the engine's.
// Writable opens are read-write (the kernel may read through them, for
// mmap); O_APPEND is left out because the kernel gives every write its
// offset, the end of the file included.
func engineFlags(flags uint32) int {
	f := os.O_RDONLY
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		f = os.O_RDWR
	}
	if flags&syscall.O_TRUNC != 0 {
		f |= os.O_TRUNC
	}
	return f
}

// Open implements NodeOpener. It checks that the node still names what
// its path holds and that the kernel's cache of it is current (see the
// package documentation, Caching) before answering.
func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	key, fi, errno := n.current()
	if errno != 0 {
		return nil, 0, errno
	}
	f, err := n.srv.fsys.OpenFile(key, engineFlags(flags), 0)
	if errors.Is(err, overlay.ErrOutside) {
		// The path became a symlink since the check above (the engine
		// follows symlinks): the file the kernel meant is gone.
		return nil, 0, syscall.ENOENT
	}
	if err != nil {
		return nil, 0, n.srv.errno("open", err)
	}
	return n.opened(f, flags, fi)
}

// Create implements NodeCreater.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	key, ok := n.childKey(name)
	if !ok {
		return nil, nil, 0, syscall.ENOENT
	}
	ef := engineFlags(flags) | os.O_CREATE
	if flags&syscall.O_EXCL != 0 {
		ef |= os.O_EXCL
	}
	f, err := n.srv.fsys.OpenFile(key, ef, fileMode(mode))
	if err != nil {
		return nil, nil, 0, n.srv.errno("create", err)
	}
	child, fi, errno := n.srv.created(ctx, &n.Inode, key, out)
	if errno != 0 {
		f.Close()
		return nil, nil, 0, errno
	}
	// go-fuse registers this node exclusively for a create.
	h, fuseFlags, errno := child.Operations().(*node).opened(f, flags, fi)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return child, h, fuseFlags, 0
}

// opened registers an open engine handle f of the node, whose path held
// fi when it was opened, and chooses how the kernel serves it:
//
//   - by passthrough, when f is backed by an OS file the kernel accepts
//     and the node's other opens allow it (see the package
//     documentation, Passthrough);
//   - else through the server: directly (FOPEN_DIRECT_IO) where
//     passthrough works, so that the rare opens that cannot have it
//     (editor buffers, which have no file; opens beside one that does not)
//     cache nothing; through the page cache (FOPEN_KEEP_CACHE, checked by
//     refresh at every open) where the kernel allows no passthrough.
//
// Buffers are always read directly: each read returns what the buffer
// holds then, whatever size the kernel last heard of.
func (n *node) opened(f afero.File, flags uint32, fi fs.FileInfo) (gofs.FileHandle, uint32, syscall.Errno) {
	h := &handle{n: n, f: f, writable: flags&syscall.O_ACCMODE != syscall.O_RDONLY, sig: contentSig(fi)}
	if d, ok := f.(overlay.FileDescriptor); ok {
		h.osf, _ = d.OSFile()
	}
	var id fileID
	ptWorks := false
	if h.osf != nil {
		if fid, ok := idOf(h.osf); ok && n.srv.passthrough(h.osf, fid.dev) {
			id, ptWorks = fid, true
		}
	}
	if ptWorks && !h.writable && !n.srv.onDisk(h.osf) {
		// A draft file's backing is registered writable, so that writers
		// can share it with readers: go-fuse registers the first
		// passthrough handle's file for the whole node. (A writer's own
		// file is read-write already: the engine flags say so.)
		h.rw, _ = os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", h.osf.Fd()), os.O_RDWR, 0)
	}
	rwBacking := h.rw != nil || h.writable
	if h.osf == nil && !h.writable {
		// An editor buffer: keep the text as of now.
		text, err := readAll(f)
		if err != nil {
			f.Close()
			return nil, 0, n.srv.errno("read", err)
		}
		h.text = text
	}
	wantPT := ptWorks
	// What the kernel cached (pages, size, times) may predate the
	// content the path holds now: drop it before the open returns.
	n.refresh(h.sig)
	if errno := n.admit(h, id, wantPT, rwBacking); errno != 0 {
		h.closeFiles()
		return nil, 0, errno
	}
	if !h.pt && h.rw != nil {
		h.rw.Close()
		h.rw = nil
	}
	n.srv.mu.Lock()
	n.srv.open[h] = struct{}{}
	n.srv.mu.Unlock()
	switch {
	case h.pt:
		return ptHandle{h}, fuse.FOPEN_NOFLUSH, 0
	case h.osf == nil || ptWorks:
		return h, fuse.FOPEN_DIRECT_IO | fuse.FOPEN_NOFLUSH, 0
	}
	return h, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH, 0
}

// readAll reads a whole file through ReadAt.
func readAll(f afero.File) ([]byte, error) {
	buf := make([]byte, 0, 4096)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.ReadAt(buf[len(buf):cap(buf)], int64(len(buf)))
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// freshFor is how long a new node is taken for the one the kernel just
// looked up again after an ESTALE: it gets no other, since the kernel
// retries only once.
const freshFor = time.Second

// drainWait bounds how long an open of a fresh node waits for the
// node's passthrough opens of another file to close.
const drainWait = 100 * time.Millisecond

// admit counts h among n's opens: as a passthrough open when wantPT and
// the kernel can take it (every passthrough open of an inode shares one
// backing file, id here, writable for a writer, and none mixes with an
// open through the server), else as an open through the server.
// rwBacking says whether h's backing file would be writable. When the
// node's passthrough opens stand in the way, or the node is idle but
// bound to another backing file (go-fuse may still hold it a moment
// after its last open closed), the path moves to a fresh node and the
// open is answered ESTALE: the kernel looks the path up again and
// retries. A fresh node, which may be that retry, gets no ESTALE: it
// waits a moment for its passthrough opens to close, and otherwise
// serves the open through the server.
func (n *node) admit(h *handle, id fileID, wantPT, rwBacking bool) syscall.Errno {
	n.mu.Lock()
	defer n.mu.Unlock()
	deadline := time.Now().Add(drainWait)
	for {
		fresh := time.Since(n.born) < freshFor
		unset := n.backing == (fileID{})
		switch {
		case wantPT && n.cached == 0 && n.draining == 0 && (unset || n.backing == id) && (!h.writable || unset || n.backingRW):
			if unset {
				n.backingRW = true
			}
			n.backing = id
			n.backingRW = n.backingRW && rwBacking
			n.ptOpen++
			h.pt = true
			return 0
		case n.ptOpen == 0 && wantPT && n.cached == 0 && !fresh:
			// Idle, bound to another backing file: a fresh node will
			// have passthrough again.
		case n.ptOpen == 0:
			n.cached++
			return 0
		case fresh && time.Now().Before(deadline):
			n.draining++
			n.mu.Unlock()
			time.Sleep(time.Millisecond)
			n.mu.Lock()
			n.draining--
			continue
		}
		// The path moves to a fresh node, as a replaced file would.
		n.srv.replace(n)
		return syscall.ESTALE
	}
}

// onDisk reports whether f is a workspace file rather than a draft's.
func (s *Server) onDisk(f *os.File) bool {
	return within(f.Name(), s.d.Workspace().Root())
}

// released forgets a handle's open.
func (n *node) released(h *handle) {
	n.mu.Lock()
	if h.pt {
		n.ptOpen--
	} else {
		n.cached--
	}
	n.mu.Unlock()
	n.srv.mu.Lock()
	delete(n.srv.open, h)
	n.srv.mu.Unlock()
}

// passthrough reports whether the kernel accepts files of device dev as
// passthrough backing files, asking it once per device with f.
func (s *Server) passthrough(f *os.File, dev uint64) bool {
	s.mu.Lock()
	ok, known := s.ptDev[dev]
	s.mu.Unlock()
	if known {
		return ok
	}
	id, errno := s.fuse.RegisterBackingFd(&fuse.BackingMap{Fd: int32(f.Fd())})
	ok = errno == 0
	if ok {
		s.fuse.UnregisterBackingFd(id)
	} else {
		s.logf("fusefs: no passthrough for files on device %d:%d (%v): reads go through the page cache", unix.Major(dev), unix.Minor(dev), errno)
	}
	s.mu.Lock()
	s.ptDev[dev] = ok
	s.mu.Unlock()
	return ok
}
