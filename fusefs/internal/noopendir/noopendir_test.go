//go:build linux

package noopendir

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// raw is go-fuse's side of a file system as the shim sees it: it hands
// out directory handles and records the requests it gets, each with
// the handle it came with.
type raw struct {
	fuse.RawFileSystem
	openFails fuse.Status // OpenDir's answer when not OK
	next      uint64      // the last handle handed out
	calls     []string
}

func (r *raw) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if r.openFails != fuse.OK {
		r.calls = append(r.calls, fmt.Sprintf("opendir %d: failed", in.NodeId))
		return r.openFails
	}
	r.next++
	out.Fh = r.next
	r.calls = append(r.calls, fmt.Sprintf("opendir %d: fh %d", in.NodeId, out.Fh))
	return fuse.OK
}

func (r *raw) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	r.calls = append(r.calls, fmt.Sprintf("readdir %d fh %d off %d", in.NodeId, in.Fh, in.Offset))
	return fuse.OK
}

func (r *raw) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	r.calls = append(r.calls, fmt.Sprintf("readdirplus %d fh %d off %d", in.NodeId, in.Fh, in.Offset))
	return fuse.OK
}

func (r *raw) FsyncDir(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	r.calls = append(r.calls, fmt.Sprintf("fsyncdir %d fh %d", in.NodeId, in.Fh))
	return fuse.OK
}

func (r *raw) ReleaseDir(in *fuse.ReleaseIn) {
	r.calls = append(r.calls, fmt.Sprintf("releasedir %d fh %d", in.NodeId, in.Fh))
}

func newFS() (FS, *raw) {
	r := &raw{RawFileSystem: fuse.NewDefaultRawFileSystem()}
	return FS{RawFileSystem: r}, r
}

func check(t *testing.T, r *raw, want ...string) {
	t.Helper()
	if !slices.Equal(r.calls, want) {
		t.Fatalf("go-fuse got\n  %q\nwant\n  %q", r.calls, want)
	}
	r.calls = nil
}

// TestOpenDirDeclined: the kernel's OPENDIR is answered ENOSYS without
// reaching go-fuse, which makes the kernel stop sending it.
func TestOpenDirDeclined(t *testing.T) {
	fs, r := newFS()
	in := fuse.OpenIn{InHeader: fuse.InHeader{NodeId: 5}}
	if st := fs.OpenDir(nil, &in, &fuse.OpenOut{}); st != fuse.ENOSYS {
		t.Fatalf("OpenDir: %v, want ENOSYS", st)
	}
	check(t, r)
}

// TestListWithoutHandle: a READDIR, READDIRPLUS or FSYNCDIR without a
// handle (the kernel opened the directory itself) is served through a
// handle opened for it alone and released after it, and the request the
// kernel sent is left as it was.
func TestListWithoutHandle(t *testing.T) {
	fs, r := newFS()
	var list fuse.DirEntryList
	in := fuse.ReadIn{InHeader: fuse.InHeader{NodeId: 5}, Offset: 3}
	if st := fs.ReadDir(nil, &in, &list); st != fuse.OK {
		t.Fatal(st)
	}
	check(t, r, "opendir 5: fh 1", "readdir 5 fh 1 off 3", "releasedir 5 fh 1")
	if in.Fh != 0 {
		t.Fatalf("the kernel's request now has handle %d", in.Fh)
	}
	if st := fs.ReadDirPlus(nil, &in, &list); st != fuse.OK {
		t.Fatal(st)
	}
	check(t, r, "opendir 5: fh 2", "readdirplus 5 fh 2 off 3", "releasedir 5 fh 2")
	sync := fuse.FsyncIn{InHeader: fuse.InHeader{NodeId: 7}}
	if st := fs.FsyncDir(nil, &sync); st != fuse.OK {
		t.Fatal(st)
	}
	check(t, r, "opendir 7: fh 3", "fsyncdir 7 fh 3", "releasedir 7 fh 3")
	if sync.Fh != 0 {
		t.Fatalf("the kernel's fsync now has handle %d", sync.Fh)
	}
}

// TestListWithHandle: a request that comes with a handle (one opened
// before the kernel took no_opendir) goes to go-fuse as it is.
func TestListWithHandle(t *testing.T) {
	fs, r := newFS()
	var list fuse.DirEntryList
	in := fuse.ReadIn{InHeader: fuse.InHeader{NodeId: 5}, Fh: 9}
	fs.ReadDir(nil, &in, &list)
	fs.ReadDirPlus(nil, &in, &list)
	fs.FsyncDir(nil, &fuse.FsyncIn{InHeader: fuse.InHeader{NodeId: 5}, Fh: 9})
	check(t, r, "readdir 5 fh 9 off 0", "readdirplus 5 fh 9 off 0", "fsyncdir 5 fh 9")
}

// TestListOpenFails: when go-fuse cannot open the directory (it went),
// its answer is the request's, and nothing is read or released.
func TestListOpenFails(t *testing.T) {
	fs, r := newFS()
	r.openFails = fuse.ENOENT
	in := fuse.ReadIn{InHeader: fuse.InHeader{NodeId: 5}}
	if st := fs.ReadDir(nil, &in, &fuse.DirEntryList{}); st != fuse.ENOENT {
		t.Fatalf("ReadDir: %v, want ENOENT", st)
	}
	if st := fs.FsyncDir(nil, &fuse.FsyncIn{InHeader: fuse.InHeader{NodeId: 5}}); st != fuse.ENOENT {
		t.Fatalf("FsyncDir: %v, want ENOENT", st)
	}
	check(t, r, "opendir 5: failed", "opendir 5: failed")
}
