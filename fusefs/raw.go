//go:build linux

package fusefs

import "github.com/hanwen/go-fuse/v2/fuse"

// rawFS is go-fuse's node file system with directories served without
// OPENDIR: the first one is answered ENOSYS, after which the kernel
// opens directories itself (FUSE's no_opendir) and keeps their listings
// (FOPEN_CACHE_DIR) across opens, so listing a cached directory costs no
// round trip. go-fuse reads listings only through an open handle, so
// each READDIR (and FSYNCDIR) without one opens one for itself.
//
// It marks the writes after which the node must clear set-id bits
// (WRITE_KILL_SUIDGID; see killPriv).
//
// In passthrough mode it also completes OPEN and CREATE replies with the
// backing file a node chose, and tells the node when the kernel released
// the file, after go-fuse did (see passthrough.go).
type rawFS struct {
	fuse.RawFileSystem
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
		out.SetTimeout(cacheTimeout)
	}
	return st
}

// Write implements fuse.RawFileSystem.
func (r rawFS) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	defer r.s.markKill(cancel, in)()
	return r.RawFileSystem.Write(cancel, in, data)
}

// Writev implements fuse.RawFileSystem (go-fuse serves WRITE with it).
func (r rawFS) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	defer r.s.markKill(cancel, in)()
	return r.RawFileSystem.Writev(cancel, in, data)
}

// markKill marks a write with WRITE_KILL_SUIDGID while it is served,
// for the node's Write; call the result when done.
func (s *Server) markKill(cancel <-chan struct{}, in *fuse.WriteIn) (unmark func()) {
	if in.WriteFlags&fuse.WRITE_KILL_SUIDGID == 0 {
		return func() {}
	}
	s.killing.Store(cancel, struct{}{})
	return func() { s.killing.Delete(cancel) }
}

// Release implements fuse.RawFileSystem.
func (r rawFS) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {
	h, ok := r.s.files.LoadAndDelete(in.Fh)
	r.RawFileSystem.Release(cancel, in)
	if ok {
		h.(*openFile).released()
	}
}

// OpenDir implements fuse.RawFileSystem by declining.
func (r rawFS) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	return fuse.ENOSYS
}

// ReadDir implements fuse.RawFileSystem.
func (r rawFS) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return r.list(cancel, in, out, r.RawFileSystem.ReadDir)
}

// ReadDirPlus implements fuse.RawFileSystem.
func (r rawFS) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return r.list(cancel, in, out, r.RawFileSystem.ReadDirPlus)
}

// list serves a READDIR(PLUS) with go-fuse's read, through a handle of
// its own when the request has none.
func (r rawFS) list(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList, read func(<-chan struct{}, *fuse.ReadIn, *fuse.DirEntryList) fuse.Status) fuse.Status {
	if in.Fh != 0 {
		return read(cancel, in, out)
	}
	opened := *in
	return r.withDir(cancel, in.InHeader, &opened.Fh, func() fuse.Status { return read(cancel, &opened, out) })
}

// FsyncDir implements fuse.RawFileSystem.
func (r rawFS) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	if in.Fh != 0 {
		return r.RawFileSystem.FsyncDir(cancel, in)
	}
	opened := *in
	return r.withDir(cancel, in.InHeader, &opened.Fh, func() fuse.Status { return r.RawFileSystem.FsyncDir(cancel, &opened) })
}

// withDir opens the directory of header in, sets *fh to the handle, runs
// op and releases the handle.
func (r rawFS) withDir(cancel <-chan struct{}, in fuse.InHeader, fh *uint64, op func() fuse.Status) fuse.Status {
	var out fuse.OpenOut
	if st := r.RawFileSystem.OpenDir(cancel, &fuse.OpenIn{InHeader: in}, &out); st != fuse.OK {
		return st
	}
	defer r.RawFileSystem.ReleaseDir(&fuse.ReleaseIn{InHeader: in, Fh: out.Fh})
	*fh = out.Fh
	return op()
}
