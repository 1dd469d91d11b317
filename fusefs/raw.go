//go:build linux

package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/draftfs/draftfs/fusefs/internal/mountopts"
	"github.com/draftfs/draftfs/fusefs/internal/noopendir"
	"github.com/draftfs/draftfs/fusefs/internal/uring"
)

// rawFS is go-fuse's node file system with directories served without
// OPENDIR (package noopendir).
//
// It notes for the node's Write the writes after which it must clear
// set-id bits (WRITE_KILL_SUIDGID; see killPriv) and those through a
// descriptor opened with O_APPEND.
//
// It serves FORGET apart from the requests that give the kernel nodes
// (see Forget).
//
// In passthrough mode it also completes OPEN and CREATE replies with the
// backing file a node chose, and tells the node when the kernel released
// the file, after go-fuse did (see passthrough.go).
type rawFS struct {
	noopendir.FS
	s *Server
}

// Open implements fuse.RawFileSystem.
func (r rawFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	st := r.RawFileSystem.Open(cancel, in, out)
	if st == fuse.OK {
		r.s.opened(cancel, out)
	}
	return st
}

// Create implements fuse.RawFileSystem. In the default mode it declines:
// after ENOSYS the kernel creates files with MKNOD and opens them itself
// (no_open), so a created file costs no RELEASE when it is closed (one
// request of ten per file tar makes). Passthrough mode keeps CREATE: its
// opens are served.
func (r rawFS) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	if !r.s.passthrough {
		return fuse.ENOSYS
	}
	st := giving(r.s, func() fuse.Status { return r.RawFileSystem.Create(cancel, in, name, out) })
	if st == fuse.OK {
		r.s.opened(cancel, &out.OpenOut)
	}
	return st
}

// SetAttr implements fuse.RawFileSystem. go-fuse leaves the reply's
// attribute timeout at 0, after which the kernel would ask again for
// attributes it was just given (tar's stat after its chmod): the reply
// is cached like a GETATTR's.
func (r rawFS) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	st := r.RawFileSystem.SetAttr(cancel, in, out)
	if st == fuse.OK && out.Timeout() == 0 {
		out.SetTimeout(mountopts.CacheTimeout)
	}
	return st
}

// Write implements fuse.RawFileSystem.
func (r rawFS) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	defer r.s.noteWrite(cancel, in)()
	return r.RawFileSystem.Write(cancel, in, data)
}

// Writev implements fuse.RawFileSystem (go-fuse serves WRITE with it).
func (r rawFS) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	defer r.s.noteWrite(cancel, in)()
	return r.RawFileSystem.Writev(cancel, in, data)
}

// noteWrite records a write with WRITE_KILL_SUIDGID, or through a
// descriptor opened with O_APPEND, while it is served, for the node's
// Write (see writeOf); call the result when done.
func (s *Server) noteWrite(cancel <-chan struct{}, in *fuse.WriteIn) (done func()) {
	if in.WriteFlags&fuse.WRITE_KILL_SUIDGID == 0 && in.Flags&syscall.O_APPEND == 0 {
		return func() {}
	}
	s.writing.Store(cancel, in)
	return func() { s.writing.Delete(cancel) }
}

// writeOf says of the WRITE behind ctx whether set-id bits must go after
// it, and whether its descriptor was opened with O_APPEND.
func (s *Server) writeOf(ctx context.Context) (kill, appending bool) {
	v, ok := s.writing.Load(cancelOf(ctx))
	if !ok {
		return false, false
	}
	in := v.(*fuse.WriteIn)
	return in.WriteFlags&fuse.WRITE_KILL_SUIDGID != 0, in.Flags&syscall.O_APPEND != 0
}

// Forget implements fuse.RawFileSystem. A FORGET is served while no
// request that gives the kernel nodes is (Lookup and the others below).
// go-fuse drops a node before it calls the node's OnForget: a lookup
// served in between found the node still in the server's table
// (nodes.Table), so it took the node it made for the same identity for
// one go-fuse would discard, and go-fuse kept that one instead; once
// the OnForget came, the table knew neither, and a write through a twin
// left the attributes the kernel keeps for it stale
// (TestForgetDuringLookup).
func (r rawFS) Forget(nodeid, nlookup uint64) {
	r.s.forgets.Lock()
	defer r.s.forgets.Unlock()
	r.RawFileSystem.Forget(nodeid, nlookup)
}

// ForgetBatch implements uring.BatchForgetter: the nodes of a
// BATCH_FORGET (hundreds when the kernel drops its caches) are served
// under one hold of the lock, not one each.
func (r rawFS) ForgetBatch(nodes []uring.Forgot) {
	r.s.forgets.Lock()
	defer r.s.forgets.Unlock()
	for _, f := range nodes {
		r.RawFileSystem.Forget(f.NodeID, f.Nlookup)
	}
}

// giving runs a request that gives the kernel nodes (see Forget).
func giving[T any](s *Server, serve func() T) T {
	s.forgets.RLock()
	defer s.forgets.RUnlock()
	return serve()
}

// Lookup implements fuse.RawFileSystem.
func (r rawFS) Lookup(cancel <-chan struct{}, header *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	return giving(r.s, func() fuse.Status { return r.RawFileSystem.Lookup(cancel, header, name, out) })
}

// Mknod implements fuse.RawFileSystem.
func (r rawFS) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	return giving(r.s, func() fuse.Status { return r.RawFileSystem.Mknod(cancel, in, name, out) })
}

// Mkdir implements fuse.RawFileSystem.
func (r rawFS) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	return giving(r.s, func() fuse.Status { return r.RawFileSystem.Mkdir(cancel, in, name, out) })
}

// Link implements fuse.RawFileSystem.
func (r rawFS) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	return giving(r.s, func() fuse.Status { return r.RawFileSystem.Link(cancel, in, name, out) })
}

// Symlink implements fuse.RawFileSystem.
func (r rawFS) Symlink(cancel <-chan struct{}, header *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	return giving(r.s, func() fuse.Status { return r.RawFileSystem.Symlink(cancel, header, target, name, out) })
}

// ReadDirPlus implements fuse.RawFileSystem.
func (r rawFS) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return giving(r.s, func() fuse.Status { return r.FS.ReadDirPlus(cancel, in, out) })
}

// Release implements fuse.RawFileSystem. A file leaves s.files only
// once its close is counted: an open that no longer finds it there is
// served as if it had never been open (passthrough's tests wait for
// that).
func (r rawFS) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	if h, ok := r.s.files.Load(in.Fh); ok {
		h.(*openFile).released()
		r.s.files.Delete(in.Fh) // the handle is go-fuse's until below: no other file has it
	}
	r.RawFileSystem.Release(cancel, in)
}
