//go:build linux

package fusefs

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/spf13/afero"
	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/beneath"
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
	f, err := n.srv.fsys.OpenFile(key, ef, fileMode(mode))
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
	errno := n.use("read", false, func(f afero.File) error {
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

// Write implements NodeWriter.
func (n *node) Write(ctx context.Context, _ gofs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	var cnt int
	errno := n.use("write", true, func(f afero.File) error {
		var err error
		cnt, err = f.WriteAt(data, off)
		return err
	})
	if _, kill := n.srv.killing.Load(cancelOf(ctx)); kill && errno == 0 {
		errno = n.killPrivAfterWrite(ctx)
	}
	return uint32(cnt), errno
}

// Fsync implements NodeFsyncer: the content and the draft's metadata
// are made durable.
func (n *node) Fsync(ctx context.Context, _ gofs.FileHandle, flags uint32) syscall.Errno {
	return n.use("fsync", false, func(f afero.File) error { return f.Sync() })
}

// Lseek implements NodeLseeker for SEEK_DATA and SEEK_HOLE (the kernel
// answers the other whences itself): the OS file knows its holes; text
// without one (an editor buffer) has none.
func (n *node) Lseek(ctx context.Context, _ gofs.FileHandle, off uint64, whence uint32) (uint64, syscall.Errno) {
	var pos uint64
	errno := n.use("lseek", false, func(f afero.File) error {
		if osf, ok := osFileOf(f); ok {
			p, err := unix.Seek(int(osf.Fd()), int64(off), int(whence))
			pos = uint64(p)
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			return err
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
		return nil
	})
	return pos, errno
}

// Allocate implements NodeAllocater on the draft file.
func (n *node) Allocate(ctx context.Context, _ gofs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	return n.use("fallocate", true, func(f afero.File) error {
		osf, ok := osFileOf(f)
		if !ok {
			return syscall.EOPNOTSUPP
		}
		return unix.Fallocate(int(osf.Fd()), mode, int64(off), int64(size))
	})
}

func osFileOf(f afero.File) (*os.File, bool) {
	if d, ok := f.(overlay.FileDescriptor); ok {
		return d.OSFile()
	}
	return nil, false
}

// use runs fn on an engine handle of n's file, writable when write: the
// pinned one, else one opened by n's path for fn alone. The kernel does
// not say when a file is closed, and a handle open for writing would
// keep its file in the draft across a commit (see overlay.Draft.Commit),
// so none stays open; reads are rare, as the kernel keeps pages.
func (n *node) use(op string, write bool, fn func(afero.File) error) syscall.Errno {
	n.ioMu.RLock()
	if n.pin != nil && write && n.pinShared {
		n.ioMu.RUnlock()
		if err := n.writablePin(); err != nil {
			return n.srv.errno(op, err)
		}
		n.ioMu.RLock()
	}
	if n.pin != nil {
		defer n.ioMu.RUnlock()
		return n.srv.errno(op, fn(n.pin))
	}
	n.ioMu.RUnlock()
	// The open checks what the path holds; no Lstat before it.
	key, ok := n.key()
	if !ok {
		return syscall.ENOENT
	}
	flag := os.O_RDONLY
	if write {
		flag = os.O_RDWR
	}
	f, err := n.srv.fsys.OpenFile(key, flag, 0)
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

// errNotPinned: the node has no pinned handle.
var errNotPinned = errors.New("not pinned")

// pinned runs fn on n's pinned handle; errNotPinned when there is none.
func (n *node) pinned(fn func(afero.File) (fs.FileInfo, error)) (fs.FileInfo, error) {
	n.ioMu.RLock()
	defer n.ioMu.RUnlock()
	if n.pin == nil {
		return nil, errNotPinned
	}
	return fn(n.pin)
}

// holdsPin reports whether n has a pinned handle.
func (n *node) holdsPin() bool {
	n.ioMu.RLock()
	defer n.ioMu.RUnlock()
	return n.pin != nil
}

// pinChild keeps the file at name in directory n reachable while its
// name is unlinked or replaced through the mount (a process may have it
// open: the kernel does not say), and returns what undoes that if the
// change fails. A file with other names stays reachable by them. A
// directory keeps its attributes (see node.gone).
func (n *node) pinChild(name string) (undo func()) {
	undo = func() {}
	in := n.GetChild(name)
	if in == nil {
		return undo
	}
	mode := in.StableAttr().Mode
	if mode != syscall.S_IFREG && mode != syscall.S_IFDIR {
		return undo
	}
	c := in.Operations().(*node)
	key, fi, errno := c.current()
	if errno != 0 {
		return undo
	}
	if mode == syscall.S_IFDIR {
		c.ioMu.Lock()
		defer c.ioMu.Unlock()
		c.gone = fi
		return func() { c.ioMu.Lock(); c.gone = nil; c.ioMu.Unlock() }
	}
	if a, ok := fi.Sys().(*overlay.Attr); ok && a.Nlink > 1 {
		return undo
	}
	// Twins stand for the same object (see twinsOf): each keeps it too.
	var undos []func()
	for _, t := range append(c.srv.twinsOf(c), c) {
		undos = append(undos, t.pinAt(key))
	}
	return func() {
		for _, u := range undos {
			u()
		}
	}
}

// pinAt pins the regular file key names (see pinChild) to n, and
// returns what undoes that.
func (n *node) pinAt(key string) (undo func()) {
	f, err := n.srv.fsys.OpenFile(key, os.O_RDONLY, 0)
	if err != nil {
		return func() {}
	}
	shared := true
	if osf, ok := osFileOf(f); ok && !n.srv.onDisk(osf) {
		// A draft file: writes through the open descriptor go on.
		if rw, err := n.srv.fsys.OpenFile(key, os.O_RDWR, 0); err == nil {
			f.Close()
			f, shared = rw, false
		}
	}
	n.ioMu.Lock()
	defer n.ioMu.Unlock()
	if n.pin != nil {
		f.Close()
		return func() {}
	}
	n.pin, n.pinShared = f, shared
	n.srv.hold(n, true)
	return func() { n.unpin(f) }
}

// goneInfo is what n's directory was when its name went (see gone);
// nil if it was no such directory.
func (n *node) goneInfo() fs.FileInfo {
	n.ioMu.RLock()
	defer n.ioMu.RUnlock()
	return n.gone
}

// writablePin makes n's pin, if it reads a file others still read (the
// disk's, which must not change, or an editor's text), a private copy
// that writes through descriptors still open on the unlinked file can
// change, as on a local disk. The copy lives in the draft's store with
// no name, and goes with the last pin on it: n's twins that pinned the
// same file get it too (see twinsOf), so they go on sharing content.
func (n *node) writablePin() error {
	n.ioMu.RLock()
	shared := n.pin != nil && n.pinShared
	n.ioMu.RUnlock()
	if !shared {
		return nil
	}
	s := n.srv
	s.privateMu.Lock()
	defer s.privateMu.Unlock()
	n.ioMu.Lock()
	if n.pin == nil || !n.pinShared {
		n.ioMu.Unlock()
		return nil // made by a twin meanwhile
	}
	cp, err := privateCopyOf(s.d, n.pin)
	if err == nil {
		n.pin.Close()
		n.pin, n.pinShared = cp, false
	}
	n.ioMu.Unlock()
	if err != nil {
		return err
	}
	for _, t := range s.twinsOf(n) {
		t.ioMu.Lock()
		if t.pin != nil && t.pinShared {
			if dup, err := cp.dup(); err == nil {
				t.pin.Close()
				t.pin, t.pinShared = dup, false
			}
		}
		t.ioMu.Unlock()
	}
	return nil
}

// privateCopyOf copies f into a nameless file of d's store.
func privateCopyOf(d *overlay.Draft, f afero.File) (*privateCopy, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	cp, err := d.NamelessFile()
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(cp, io.NewSectionReader(f, 0, fi.Size())); err != nil {
		cp.Close()
		return nil, err
	}
	return &privateCopy{File: cp, info: fi}, nil
}

// privateCopy is a pinned file's private copy (see writablePin). It
// describes itself as the file it copies, unlinked, with its own size
// and times.
type privateCopy struct {
	*os.File
	info fs.FileInfo // the original's, when copied
}

func (f *privateCopy) OSFile() (*os.File, bool) { return f.File, true }

// dup is another handle of the same copy.
func (f *privateCopy) dup() (*privateCopy, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &privateCopy{File: os.NewFile(uintptr(fd), f.Name()), info: f.info}, nil
}

func (f *privateCopy) Stat() (fs.FileInfo, error) {
	now, err := f.File.Stat()
	if err != nil {
		return nil, err
	}
	return &copyInfo{FileInfo: f.info, now: now}, nil
}

// copyInfo describes a privateCopy.
type copyInfo struct {
	fs.FileInfo             // the original's
	now         fs.FileInfo // the copy's own
}

func (i *copyInfo) Size() int64        { return i.now.Size() }
func (i *copyInfo) ModTime() time.Time { return i.now.ModTime() }

func (i *copyInfo) Sys() any {
	var a overlay.Attr
	if orig, ok := i.FileInfo.Sys().(*overlay.Attr); ok {
		a = *orig
	}
	a.Nlink = 0
	if st, ok := i.now.Sys().(*syscall.Stat_t); ok {
		a.Atime, a.Ctime, a.Blocks = time.Unix(st.Atim.Unix()), time.Unix(st.Ctim.Unix()), st.Blocks
	}
	return &a
}

// onDisk reports whether f is a workspace file rather than a draft's.
func (s *Server) onDisk(f *os.File) bool {
	return beneath.Within(f.Name(), s.d.Workspace().Root())
}

// unpin closes n's pinned handle if it is f (nil: whichever it is).
func (n *node) unpin(f afero.File) {
	n.ioMu.Lock()
	defer n.ioMu.Unlock()
	if n.pin != nil && (f == nil || n.pin == f) {
		n.pin.Close()
		n.pin = nil
		n.srv.hold(n, false)
	}
}

// hold records whether n holds a pinned handle, so that it is closed
// when serving ends (the kernel forgets nothing then).
func (s *Server) hold(n *node, holds bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if holds {
		s.pinnedNodes[n] = struct{}{}
	} else {
		delete(s.pinnedNodes, n)
	}
}

// closePins closes the pinned handles of every node.
func (s *Server) closePins() {
	s.mu.Lock()
	nodes := make([]*node, 0, len(s.pinnedNodes))
	for n := range s.pinnedNodes {
		nodes = append(nodes, n)
	}
	s.mu.Unlock()
	for _, n := range nodes {
		n.unpin(nil)
	}
}
