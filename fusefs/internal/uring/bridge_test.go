package uring

import (
	"fmt"
	"os"
	"sort"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/hanwen/go-fuse/v2/posixtest"
	"golang.org/x/sys/unix"
)

// goFuseMount mounts raw with go-fuse's Server on a new directory, on a
// descriptor opened here (the /dev/fd/N form). With ring it is served
// the way draftfs would serve over io_uring: the Server answers INIT
// with CapOverIOURing and keeps reading /dev/fuse for forgets and
// interrupts, and RawHandler serves everything else from ring queues.
// It returns the mount point and the count of requests served over the
// ring.
func goFuseMount(tb testing.TB, raw fuse.RawFileSystem, mo fuse.MountOptions, ring bool) (string, *atomic.Int64) {
	tb.Helper()
	if ring {
		mo.ExtraCapabilities |= CapOverIOURing
	}
	if mo.Name == "" {
		mo.Name = "draftfs-ring"
	}
	mnt := tb.TempDir()
	dev := mountByHand(tb, mnt, &mo, ring)
	srv, err := fuse.NewServer(raw, fmt.Sprintf("/dev/fd/%d", dev), &mo)
	if err != nil {
		unix.Unmount(mnt, unix.MNT_DETACH)
		tb.Fatal(err)
	}
	go srv.Serve()
	var rs *Server
	tb.Cleanup(func() {
		if err := unix.Unmount(mnt, 0); err != nil {
			tb.Errorf("unmount: %v", err)
			unix.Unmount(mnt, unix.MNT_DETACH)
		}
		srv.Wait()
		if rs != nil {
			if err := rs.Wait(); err != nil {
				tb.Errorf("ring server: %v", err)
			}
		}
	})
	if err := srv.WaitMount(); err != nil {
		tb.Fatal(err)
	}
	var count atomic.Int64
	if !ring {
		return mnt, &count
	}
	if srv.KernelSettings().Flags64()&CapOverIOURing == 0 {
		tb.Skip("the kernel did not offer FUSE over io_uring at INIT")
	}
	h := RawHandler(raw, &mo)
	rs, err = Serve(dev, 2, max(mo.MaxWrite, 128<<10), func(req *Request, out []byte) (int, syscall.Errno) {
		count.Add(1)
		return h(req, out)
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := PollHack(mnt); err != nil {
		tb.Fatal(err)
	}
	return mnt, &count
}

// ringLoopback serves go-fuse's loopback node tree over the ring.
func ringLoopback(t *testing.T) (string, *atomic.Int64) {
	root, err := fs.NewLoopbackRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Locks as go-fuse's own posixtest runs have them.
	mo := fuse.MountOptions{MaxWrite: 128 << 10, EnableLocks: true}
	return goFuseMount(t, fs.NewNodeFS(root, &fs.Options{MountOptions: mo}), mo, true)
}

// TestRawHandlerPosix runs go-fuse's POSIX checks through a loopback
// mount served over the ring, and checks they were.
func TestRawHandlerPosix(t *testing.T) {
	mnt, count := ringLoopback(t)
	names := make([]string, 0, len(posixtest.All))
	for n := range posixtest.All {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		dir := fmt.Sprintf("%s/%s", mnt, n)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		before := count.Load()
		t.Run(n, func(t *testing.T) { posixtest.All[n](t, dir) })
		if count.Load() == before {
			t.Errorf("%s: no request came over the ring", n)
		}
	}
}
