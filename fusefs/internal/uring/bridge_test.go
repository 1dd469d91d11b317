package uring

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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

// goFuseMount mounts raw with go-fuse answering INIT and serves it by
// transport: "gofuse" (go-fuse's own server), "dev" (ServeDev through
// RawHandler: how draftfs serves /dev/fuse) or "ring" (Serve through
// RawHandler, skipping the test where the kernel does not offer the
// ring). It returns the mount point and the count of requests
// RawHandler answered.
func goFuseMount(tb testing.TB, raw fuse.RawFileSystem, mo fuse.MountOptions, transport string) (string, *atomic.Int64) {
	tb.Helper()
	ring := transport == "ring"
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
	serve := func(wait func()) {
		defer close(served)
		if wait != nil {
			wait()
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
	if transport == "gofuse" {
		go serve(nil)
		return mnt, &count
	}
	if ring && srv.KernelSettings().Flags64()&CapOverIOURing == 0 {
		go serve(nil)
		tb.Skip("the kernel did not offer FUSE over io_uring at INIT")
	}
	rh := RawHandler(raw, &mo)
	h := func(req *Request, out []byte) (int, syscall.Errno) {
		count.Add(1)
		return rh(req, out)
	}
	if !ring {
		ds, err := ServeDev(dev, mo.MaxWrite, h, ForgetEach(raw.Forget))
		if err != nil {
			go serve(nil)
			tb.Fatal(err)
		}
		go serve(ds.Wait)
	} else {
		rs, err := Serve(dev, 2, max(mo.MaxWrite, 128<<10), h)
		if err == nil {
			err = rs.Control(ForgetEach(raw.Forget))
		}
		go serve(func() {
			if err := rs.Wait(); err != nil {
				tb.Errorf("ring server: %v", err)
			}
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	if err := PollHack(mnt); err != nil {
		tb.Fatal(err)
	}
	return mnt, &count
}

// transports are the two ways RawHandler serves a mount.
var transports = []string{"dev", "ring"}

// loopback serves go-fuse's loopback node tree by transport.
func loopback(t *testing.T, transport string) (string, *atomic.Int64) {
	root, err := fs.NewLoopbackRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Locks as go-fuse's own posixtest runs have them.
	mo := fuse.MountOptions{MaxWrite: 128 << 10, EnableLocks: true}
	return goFuseMount(t, fs.NewNodeFS(root, &fs.Options{MountOptions: mo}), mo, transport)
}

// posixChildEnv, in the environment of a child test binary, names the
// posixtest test TestPosixChild runs and its directory ("name=dir").
const posixChildEnv = "DRAFTFS_URING_POSIX_CHILD"

// TestRawHandlerPosix runs go-fuse's POSIX checks through a loopback
// mount served over /dev/fuse and over the ring, and checks they were.
// Each runs in a child process (TestPosixChild), not in the one serving
// the mount (see TestRingServesRequests).
func TestRawHandlerPosix(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) { testRawHandlerPosix(t, tr) })
	}
}

func testRawHandlerPosix(t *testing.T, transport string) {
	mnt, count := loopback(t, transport)
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
			t.Errorf("%s: no request came through RawHandler", n)
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

// TestInterrupt: a request blocked in the server is cancelled when its
// caller gets a signal (the kernel sends INTERRUPT on /dev/fuse), so a
// killed caller goes, over /dev/fuse and over the ring. The kernel
// waits for the server's answer even after SIGKILL; with the interrupt
// lost (over the ring: read by another reader of /dev/fuse, which
// cannot find ring requests) the caller stays until the request ends on
// its own.
func TestInterrupt(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) { testInterrupt(t, tr) })
	}
}

func testInterrupt(t *testing.T, transport string) {
	root, err := fs.NewLoopbackRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mo := fuse.MountOptions{MaxWrite: 128 << 10}
	b := &blockingFS{RawFileSystem: fs.NewNodeFS(root, &fs.Options{MountOptions: mo}), entered: make(chan struct{}, 8), release: make(chan struct{})}
	mnt, count := goFuseMount(t, b, mo, transport)
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
		t.Fatal("no request came through RawHandler")
	}
}

// nestingFS answers a LOOKUP of "nested" only after a stat of "inner"
// through the mount itself, as a handler does that waits in a system
// call for another request of its own mount (an invalidation waiting
// for a directory lock that a LOOKUP holds).
type nestingFS struct {
	fuse.RawFileSystem
	mnt atomic.Pointer[string] // set once mounted
}

func (n *nestingFS) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	if name == "nested" {
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(*n.mnt.Load(), "inner"), &st); err != nil {
			return fuse.ToStatus(err)
		}
	}
	return n.RawFileSystem.Lookup(cancel, h, name, out)
}

// TestDevNestedRequest: over /dev/fuse, with one P as the daemon runs,
// a request whose handler waits in a system call for another request
// of the same mount is answered: the reader that took it hands the
// reading on (see DevServer).
func TestDevNestedRequest(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	dir := t.TempDir()
	for _, name := range []string{"nested", "inner"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := fs.NewLoopbackRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	zero := time.Duration(0)
	mo := fuse.MountOptions{MaxWrite: 128 << 10}
	n := &nestingFS{RawFileSystem: fs.NewNodeFS(root, &fs.Options{MountOptions: mo, EntryTimeout: &zero, AttrTimeout: &zero})}
	mnt, _ := goFuseMount(t, n, mo, "dev")
	n.mnt.Store(&mnt)
	var st unix.Stat_t
	if err := unix.Stat(mnt, &st); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		done := make(chan error, 1)
		go func() {
			_, err := os.Stat(filepath.Join(mnt, "nested"))
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("stat %d: %v", i, err)
			}
		case <-time.After(30 * time.Second):
			// The stuck stat would keep this process from exiting.
			abortConnection(t, st.Dev)
			t.Fatalf("stat %d: unanswered after 30 s: the nested request was never read", i)
		}
	}
}

// abortConnection aborts the FUSE connection of the mount on device dev
// (fusectl's abort, mounting fusectl if need be): its requests fail.
func abortConnection(t *testing.T, dev uint64) {
	const ctl = "/sys/fs/fuse/connections"
	if err := unix.Mount("fusectl", ctl, "fusectl", 0, ""); err != nil && err != unix.EBUSY {
		t.Logf("mount fusectl: %v", err)
	}
	abort := fmt.Sprintf("%s/%d/abort", ctl, unix.Minor(dev))
	if err := os.WriteFile(abort, []byte("1"), 0); err != nil {
		t.Logf("abort the connection: %v", err)
	}
}
