package uring

import (
	"bytes"
	"cmp"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// toyFS is the smallest file system the kernel mounts: a root directory
// holding one regular file, "file", that takes writes (and forgets
// them). It answers the same bytes over either transport, so the two
// can be compared request for request.
type toyFS struct {
	ring         bool // INIT offers FUSE_OVER_IO_URING
	ringRequests atomic.Int64
	requests     atomic.Int64
	written      atomic.Int64
	lookups      atomic.Int64
	minor        uint32
	// slow, when set, holds a LOOKUP of "slow" until it is closed.
	slow chan struct{}
	// busy is how long a LOOKUP of "file" computes, holding its P
	busy time.Duration
	// workers each ring queue starts with; 0: 2
	workers int
	// server serves the ring, once toyMount started it
	server *Server
}

const (
	toyMaxWrite = 128 << 10
	toyFileIno  = 2
)

func put[T any](out []byte, v T) int {
	*(*T)(unsafe.Pointer(&out[0])) = v
	return int(unsafe.Sizeof(v))
}

func (t *toyFS) attr(ino uint64) fuse.Attr {
	if ino == fuse.FUSE_ROOT_ID {
		return fuse.Attr{Ino: ino, Mode: syscall.S_IFDIR | 0o755, Nlink: 2, Blksize: 4096}
	}
	return fuse.Attr{Ino: ino, Mode: syscall.S_IFREG | 0o644, Nlink: 1, Size: uint64(t.written.Load()), Blksize: 4096}
}

func (t *toyFS) serve(req *Request, out []byte) (int, syscall.Errno) {
	t.requests.Add(1)
	in := req.Header()
	switch in.Opcode {
	case opInit:
		init := (*fuse.InitIn)(unsafe.Pointer(&req.In[0]))
		flags := init.Flags64() & (fuse.CAP_ASYNC_READ | fuse.CAP_BIG_WRITES | fuse.CAP_MAX_PAGES | fuse.CAP_PARALLEL_DIROPS)
		flags |= 1 << 30 // FUSE_INIT_EXT: the kernel reads flags2
		if t.ring {
			flags |= CapOverIOURing
		}
		t.minor = min(init.Minor, 45)
		return put(out, fuse.InitOut{
			Major: 7, Minor: t.minor, MaxReadAhead: init.MaxReadAhead,
			Flags: uint32(flags), Flags2: uint32(flags >> 32),
			MaxBackground: 12, CongestionThreshold: 9, MaxWrite: toyMaxWrite,
			MaxPages: toyMaxWrite / 4096, TimeGran: 1,
		}), 0
	case 1: // LOOKUP
		t.lookups.Add(1)
		name, _, _ := bytes.Cut(req.Payload, []byte{0})
		if string(name) == "slow" && t.slow != nil {
			<-t.slow
		}
		for start := time.Now(); string(name) == "file" && time.Since(start) < t.busy; {
		}
		if in.NodeId != fuse.FUSE_ROOT_ID || string(name) != "file" {
			return 0, syscall.ENOENT
		}
		// Zero timeouts: every stat reaches the server (LOOKUP to
		// revalidate the name, GETATTR for the attributes).
		return put(out, fuse.EntryOut{NodeId: toyFileIno, Attr: t.attr(toyFileIno)}), 0
	case 3: // GETATTR
		return put(out, fuse.AttrOut{Attr: t.attr(in.NodeId)}), 0
	case 4: // SETATTR: only a size (O_TRUNC) changes anything
		if s := (*fuse.SetAttrIn)(unsafe.Pointer(&req.In[0])); s.Valid&fuse.FATTR_SIZE != 0 {
			t.written.Store(int64(s.Size))
		}
		return put(out, fuse.AttrOut{Attr: t.attr(in.NodeId)}), 0
	case 14, 27: // OPEN, OPENDIR
		return put(out, fuse.OpenOut{Fh: 1}), 0
	case 16: // WRITE
		size := (*fuse.WriteIn)(unsafe.Pointer(&req.In[0])).Size
		if int(size) != len(req.Payload) {
			return 0, syscall.EIO
		}
		t.written.Add(int64(size))
		return put(out, fuse.WriteOut{Size: size}), 0
	case 18, 25, 29: // RELEASE, FLUSH, RELEASEDIR
		return 0, 0
	case 17: // STATFS
		return put(out, fuse.StatfsOut{Bsize: 4096, NameLen: 255}), 0
	case opForget, opBatchForget, opInterrupt:
		return 0, 0
	}
	return 0, syscall.ENOSYS
}

// toyMount mounts t at a new directory with its own /dev/fuse
// descriptor, served over the ring when t.ring is set, and returns the
// mount point. It skips the test when the kernel or permissions do not
// allow it.
func toyMount(tb testing.TB, t *toyFS, readers int) string {
	tb.Helper()
	mnt := tb.TempDir()
	dev := mountByHand(tb, mnt, &fuse.MountOptions{Name: "draftfs-toy", AllowOther: true, MaxWrite: toyMaxWrite}, t.ring)
	loop := serveToyDev(dev, readers, t.serve)
	var rs *Server
	tb.Cleanup(func() {
		if err := unix.Unmount(mnt, 0); err != nil {
			unix.Unmount(mnt, unix.MNT_DETACH)
		}
		loop.Wait()
		if rs != nil {
			if err := rs.Wait(); err != nil {
				tb.Errorf("ring server: %v", err)
			}
		}
		unix.Close(dev)
	})
	// The kernel sent INIT when it mounted.
	select {
	case <-loop.Initialized:
	case <-time.After(10 * time.Second):
		tb.Fatal("no INIT from the kernel")
	}
	if t.ring {
		var err error
		rs, err = Serve(dev, cmp.Or(t.workers, 2), toyMaxWrite, func(req *Request, out []byte) (int, syscall.Errno) {
			t.ringRequests.Add(1)
			return t.serve(req, out)
		})
		if err != nil {
			tb.Fatal(err)
		}
		t.server = rs
	}
	return mnt
}

// idleEverywhere says whether every queue has a worker registered and
// waiting for a request.
func (s *Server) idleEverywhere() bool {
	for i := range s.idle {
		if s.idle[i].Load() == 0 {
			return false
		}
	}
	return true
}

// mountByHand mounts a FUSE connection at mnt and returns its
// descriptor, skipping the test without root, and with ring without
// kernel support. With ring it turns enable_uring on for the time the
// test takes and restores it at cleanup (HoldEnabled): a connection
// negotiates the ring at INIT only while it is on.
func mountByHand(tb testing.TB, mnt string, o *fuse.MountOptions, ring bool) int {
	tb.Helper()
	if os.Getuid() != 0 {
		tb.Skip("mounting a FUSE file system by hand needs root")
	}
	if ring {
		release, err := HoldEnabled()
		if err != nil {
			tb.Skip(err)
		}
		tb.Cleanup(release)
	}
	dev, err := MountDirect(mnt, o)
	if err != nil {
		tb.Skip(err)
	}
	return dev
}
