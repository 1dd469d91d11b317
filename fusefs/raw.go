//go:build linux

package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/draftfs/draftfs/fusefs/internal/mountopts"
	"github.com/draftfs/draftfs/fusefs/internal/noopendir"
)

// rawFS is go-fuse's node file system with directories served without
// OPENDIR (package noopendir).
//
// It notes for the node's Write the writes after which it must clear
// set-id bits (WRITE_KILL_SUIDGID; see killPriv) and those through a
// descriptor opened with O_APPEND.
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
	st := r.RawFileSystem.Create(cancel, in, name, out)
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

// Release implements fuse.RawFileSystem.
func (r rawFS) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	h, ok := r.s.files.LoadAndDelete(in.Fh)
	r.RawFileSystem.Release(cancel, in)
	if ok {
		h.(*openFile).released()
	}
}
