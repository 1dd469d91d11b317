package fusefs

import "github.com/hanwen/go-fuse/v2/fuse"

// rawFS is go-fuse's node file system with directories served without
// OPENDIR: the first one is answered ENOSYS, after which the kernel
// opens directories itself (FUSE's no_opendir) and keeps their listings
// (FOPEN_CACHE_DIR) across opens, so listing a cached directory costs no
// round trip. go-fuse reads listings only through an open handle, so
// each READDIR (and FSYNCDIR) without one opens one for itself.
type rawFS struct {
	fuse.RawFileSystem
}

// OpenDir implements fuse.RawFileSystem by declining.
func (r rawFS) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	return fuse.ENOSYS
}

// withDir runs op with a handle of the directory in, opened for it.
func (r rawFS) withDir(cancel <-chan struct{}, in fuse.InHeader, op func(fh uint64) fuse.Status) fuse.Status {
	var out fuse.OpenOut
	if st := r.RawFileSystem.OpenDir(cancel, &fuse.OpenIn{InHeader: in}, &out); st != fuse.OK {
		return st
	}
	defer r.RawFileSystem.ReleaseDir(&fuse.ReleaseIn{InHeader: in, Fh: out.Fh})
	return op(out.Fh)
}

// ReadDir implements fuse.RawFileSystem.
func (r rawFS) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if in.Fh != 0 {
		return r.RawFileSystem.ReadDir(cancel, in, out)
	}
	return r.withDir(cancel, in.InHeader, func(fh uint64) fuse.Status {
		opened := *in
		opened.Fh = fh
		return r.RawFileSystem.ReadDir(cancel, &opened, out)
	})
}

// ReadDirPlus implements fuse.RawFileSystem.
func (r rawFS) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	if in.Fh != 0 {
		return r.RawFileSystem.ReadDirPlus(cancel, in, out)
	}
	return r.withDir(cancel, in.InHeader, func(fh uint64) fuse.Status {
		opened := *in
		opened.Fh = fh
		return r.RawFileSystem.ReadDirPlus(cancel, &opened, out)
	})
}

// FsyncDir implements fuse.RawFileSystem.
func (r rawFS) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	if in.Fh != 0 {
		return r.RawFileSystem.FsyncDir(cancel, in)
	}
	return r.withDir(cancel, in.InHeader, func(fh uint64) fuse.Status {
		opened := *in
		opened.Fh = fh
		return r.RawFileSystem.FsyncDir(cancel, &opened)
	})
}
