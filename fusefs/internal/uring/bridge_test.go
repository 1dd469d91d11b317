package uring

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/hanwen/go-fuse/v2/posixtest"
	"golang.org/x/sys/unix"
)

// goFuseMount mounts raw with go-fuse's Server on a new directory, on a
// descriptor opened here (the /dev/fd/N form). With ring it is served
// the way draftfs serves over io_uring: the Server answers INIT with
// CapOverIOURing, RawHandler serves requests from ring queues and
// Server.Control takes forgets and interrupts from /dev/fuse; go-fuse's
// Serve runs only once the connection ended, to close its descriptor.
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
	served := make(chan struct{})
	serve := func(rs *Server) {
		defer close(served)
		if rs != nil {
			if err := rs.Wait(); err != nil {
				tb.Errorf("ring server: %v", err)
			}
		}
		srv.Serve()
	}
	tb.Cleanup(func() {
		if err := unix.Unmount(mnt, 0); err != nil {
			tb.Errorf("unmount: %v", err)
			unix.Unmount(mnt, unix.MNT_DETACH)
		}
		<-served
	})
	var count atomic.Int64
	if !ring {
		go serve(nil)
		return mnt, &count
	}
	if srv.KernelSettings().Flags64()&CapOverIOURing == 0 {
		go serve(nil)
		tb.Skip("the kernel did not offer FUSE over io_uring at INIT")
	}
	h := RawHandler(raw, &mo)
	rs, err := Serve(dev, 2, max(mo.MaxWrite, 128<<10), func(req *Request, out []byte) (int, syscall.Errno) {
		count.Add(1)
		return h(req, out)
	})
	if err == nil {
		err = rs.Control(raw.Forget)
	}
	go serve(rs)
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

// posixChildEnv, in the environment of a child test binary, names the
// posixtest test TestPosixChild runs and its directory ("name=dir").
const posixChildEnv = "DRAFTFS_URING_POSIX_CHILD"

// TestRawHandlerPosix runs go-fuse's POSIX checks through a loopback
// mount served over the ring, and checks they were. Each runs in a
// child process (TestPosixChild), not in the one serving the mount (see
// TestRingServesRequests).
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
		t.Run(n, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestPosixChild$", "-test.v", "-test.timeout=2m")
			cmd.Env = append(os.Environ(), posixChildEnv+"="+n+"="+dir)
			out, err := cmd.CombinedOutput()
			switch {
			case err != nil:
				t.Fatalf("%v\n%s", err, out)
			case strings.Contains(string(out), "--- SKIP: TestPosixChild"):
				t.Skipf("skipped in the child:\n%s", out)
			case !strings.Contains(string(out), "--- PASS: TestPosixChild"):
				t.Fatalf("the child did not run it:\n%s", out)
			}
		})
		if count.Load() == before {
			t.Errorf("%s: no request came over the ring", n)
		}
	}
}

// TestPosixChild runs the posixtest test posixChildEnv names, for
// TestRawHandlerPosix; it skips when run on its own.
func TestPosixChild(t *testing.T) {
	name, dir, ok := strings.Cut(os.Getenv(posixChildEnv), "=")
	if !ok {
		t.Skip("run by TestRawHandlerPosix in a child process")
	}
	posixtest.All[name](t, dir)
}

// blockingFS holds a LOOKUP of "block" until the request is cancelled
// (an interrupt) or release is closed.
type blockingFS struct {
	fuse.RawFileSystem
	entered     chan struct{}
	release     chan struct{}
	interrupted atomic.Bool
}

func (b *blockingFS) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	if name != "block" {
		return b.RawFileSystem.Lookup(cancel, h, name, out)
	}
	b.entered <- struct{}{}
	select {
	case <-cancel:
		b.interrupted.Store(true)
		return fuse.EINTR
	case <-b.release:
		return fuse.ENOENT
	}
}

// TestRingInterrupt: a request blocked in the server over the ring is
// cancelled when its caller gets a signal (the kernel sends INTERRUPT on
// /dev/fuse), so a killed caller goes. The kernel waits for the
// server's answer even after SIGKILL; with the interrupt lost (read by
// another reader of /dev/fuse, which cannot find ring requests) the
// caller stays until the request ends on its own.
func TestRingInterrupt(t *testing.T) {
	root, err := fs.NewLoopbackRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mo := fuse.MountOptions{MaxWrite: 128 << 10}
	b := &blockingFS{RawFileSystem: fs.NewNodeFS(root, &fs.Options{MountOptions: mo}), entered: make(chan struct{}, 8), release: make(chan struct{})}
	mnt, count := goFuseMount(t, b, mo, true)
	before := count.Load()
	defer close(b.release)
	for i := range 3 { // the second and later ones on an entry whose cancel was replaced
		cmd := exec.Command("stat", filepath.Join(mnt, "block"))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		<-b.entered
		cmd.Process.Signal(syscall.SIGTERM)
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case <-exited:
		case <-time.After(time.Minute):
			t.Fatalf("stat %d: a minute after SIGTERM, its blocked LOOKUP is still unanswered", i)
		}
		if !b.interrupted.Swap(false) {
			t.Fatalf("stat %d: the LOOKUP was not cancelled", i)
		}
	}
	if out, err := exec.Command("stat", filepath.Join(mnt, "missing")).CombinedOutput(); err == nil || !strings.Contains(string(out), "No such file") {
		t.Fatalf("stat after the interrupts: %v: %s", err, out)
	}
	if count.Load() == before {
		t.Fatal("no request came over the ring")
	}
}
