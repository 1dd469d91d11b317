//go:build linux

// Package noopendir serves directories of a go-fuse file system
// without OPENDIR: the first one is answered ENOSYS, after which the
// kernel opens directories itself (FUSE's no_opendir) and keeps their
// listings (FOPEN_CACHE_DIR) across opens, so listing a cached
// directory costs no round trip. go-fuse reads listings only through an
// open handle, so each READDIR (and FSYNCDIR) without one opens one for
// itself. It is a shim over go-fuse's raw API, not part of draftfs's
// adapter, which embeds it.
package noopendir

import "github.com/hanwen/go-fuse/v2/fuse"

// FS is fs with directories served without OPENDIR.
type FS struct {
	fuse.RawFileSystem
}

// OpenDir implements fuse.RawFileSystem by declining.
func (r FS) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	return fuse.ENOSYS
}

// ReadDir implements fuse.RawFileSystem.
func (r FS) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return r.list(cancel, in, out, r.RawFileSystem.ReadDir)
}

// ReadDirPlus implements fuse.RawFileSystem.
func (r FS) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return r.list(cancel, in, out, r.RawFileSystem.ReadDirPlus)
}

// list serves a READDIR(PLUS) with go-fuse's read, through a handle of
// its own when the request has none.
func (r FS) list(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList, read func(<-chan struct{}, *fuse.ReadIn, *fuse.DirEntryList) fuse.Status) fuse.Status {
	if in.Fh != 0 {
		return read(cancel, in, out)
	}
	opened := *in
	return r.withDir(cancel, in.InHeader, &opened.Fh, func() fuse.Status { return read(cancel, &opened, out) })
}

// FsyncDir implements fuse.RawFileSystem.
func (r FS) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	if in.Fh != 0 {
		return r.RawFileSystem.FsyncDir(cancel, in)
	}
	opened := *in
	return r.withDir(cancel, in.InHeader, &opened.Fh, func() fuse.Status { return r.RawFileSystem.FsyncDir(cancel, &opened) })
}

// withDir opens the directory of header in, sets *fh to the handle, runs
// op and releases the handle.
func (r FS) withDir(cancel <-chan struct{}, in fuse.InHeader, fh *uint64, op func() fuse.Status) fuse.Status {
	var out fuse.OpenOut
	if st := r.RawFileSystem.OpenDir(cancel, &fuse.OpenIn{InHeader: in}, &out); st != fuse.OK {
		return st
	}
	defer r.RawFileSystem.ReleaseDir(&fuse.ReleaseIn{InHeader: in, Fh: out.Fh})
	*fh = out.Fh
	return op()
}
