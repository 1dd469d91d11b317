//go:build linux

package fusefs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/draftfs/draftfs/daemon/mounts"
	"github.com/draftfs/draftfs/daemon/serving"
	"github.com/draftfs/draftfs/fusefs/internal/uring"
	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/vfstest"
	"golang.org/x/sys/unix"
)

// TestMain lets the test binary be a mount server for tests that need
// one in another process. First it raises its threads' timer slack as
// the draftfs daemon does (serving.RaiseSlack, which execs the test
// binary again where cgo did not raise it before the start), so that
// the mounts the tests make are served with the same timing;
// GOMAXPROCS stays Go's default, where races show more.
func TestMain(m *testing.M) {
	serving.RaiseSlack()
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case serveCommand:
			os.Exit(serveForTest(os.Args[2:]))
		}
	}
	if uringAll {
		// Machine-wide, read at INIT only: on for the whole run (other
		// mounts do not ask for the ring, so they do not notice).
		release, err := uring.HoldEnabled()
		if err != nil {
			fmt.Fprintln(os.Stderr, "DRAFTFS_TEST_URING=1:", err)
			os.Exit(2)
		}
		code := m.Run()
		release()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// mounted is a workspace, its draft and the draft's mount.
type mounted struct {
	ws    *overlay.Workspace
	d     *overlay.Draft
	srv   *Server
	root  string // the workspace directory
	mnt   string // the mount point
	state string // the state directory
	// passthrough: mounted in passthrough mode
	passthrough bool
	// opts mounted it; watch: the engine watches the disk
	opts  Options
	watch bool
}

// mountOptions tune testMount.
type mountOptions struct {
	files      map[string]string // initial workspace content: path → text ("/" suffix: a directory)
	watch      bool              // watch the disk
	allowOther bool
	rootMode   os.FileMode // the workspace directory's mode, 0755 when 0
	// passthrough mode (Options.Passthrough)
	passthrough bool
	// ring: ask for FUSE over io_uring (Options.IOURing)
	ring bool
	// logf, when set, receives the server's log, every request
	// included (Options.Debug).
	logf func(string, ...any)
	// beforeOpen, when set, runs on the workspace directory once it
	// holds files, before the engine opens it.
	beforeOpen func(t testing.TB, root string)
}

// passthroughAll puts every test mount in passthrough mode, to run the
// package's tests in that mode too (scripts/test.sh does).
var passthroughAll = os.Getenv("DRAFTFS_TEST_PASSTHROUGH") == "1"

// uringAll serves every test mount over FUSE over io_uring
// (Options.IOURing), to run the package's tests in that mode too; it
// needs root and a kernel that has it (scripts/test.sh sets it where
// both hold).
var uringAll = os.Getenv("DRAFTFS_TEST_URING") == "1"

// testMount mounts a draft of a new workspace, with cleanups that fail
// the test if unmounting fails, if the mount stays, or if a descriptor
// leaked. It skips when /dev/fuse cannot be opened.
func testMount(t testing.TB, o mountOptions) *mounted {
	t.Helper()
	requireFuse(t)
	fdsBefore := openFds(t)
	t.Cleanup(func() {
		leaked := []string{}
		for fd, target := range openFds(t) {
			if _, ok := fdsBefore[fd]; !ok && !strings.HasPrefix(target, "anon_inode:") {
				leaked = append(leaked, fmt.Sprintf("fd %s -> %s", fd, target))
			}
		}
		if len(leaked) > 0 {
			t.Errorf("leaked descriptors: %s", strings.Join(leaked, ", "))
		}
	})
	base := t.TempDir()
	m := &mounted{root: filepath.Join(base, "ws"), mnt: filepath.Join(base, "mnt"), state: filepath.Join(base, "state")}
	for _, dir := range []string{m.root, m.mnt} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeTree(t, m.root, o.files)
	if o.rootMode != 0 {
		if err := os.Chmod(m.root, o.rootMode); err != nil {
			t.Fatal(err)
		}
	}
	if o.beforeOpen != nil {
		o.beforeOpen(t, m.root)
	}
	ws, err := overlay.Open(overlay.Options{Root: m.root, StateDir: m.state, Watch: o.watch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.ws.Close(); err != nil {
			t.Errorf("close workspace: %v", err)
		}
	})
	m.ws, m.watch = ws, o.watch
	if m.d, err = ws.Draft(""); err != nil {
		t.Fatal(err)
	}
	opts := Options{AllowOther: o.allowOther, Passthrough: o.passthrough || passthroughAll, IOURing: o.ring || uringAll, Logf: t.Logf}
	if o.logf != nil {
		opts.Logf, opts.Debug = o.logf, true
	}
	m.passthrough, m.opts = opts.Passthrough, opts
	m.srv, err = Mount(m.mnt, m.d, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Unmount before anything can fail the test: the temporary
	// directory's removal would otherwise walk into the live mount.
	t.Cleanup(func() {
		if err := m.srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
			return
		}
		m.srv.Wait()
		if typ, err := mounts.At(m.mnt); err != nil || typ != "" {
			t.Errorf("mount %s still there after unmount (%v)", m.mnt, err)
		}
	})
	if uringAll && !opts.Debug && !m.srv.ring {
		t.Fatal("DRAFTFS_TEST_URING=1, but the mount is served over /dev/fuse (see its log)")
	}
	return m
}

// remount unmounts, closes the engine, and opens and mounts it again
// from the state directory, as a restarted daemon does.
func (m *mounted) remount(t testing.TB) {
	t.Helper()
	if err := m.srv.Unmount(); err != nil {
		t.Fatalf("unmount: %v", err)
	}
	m.srv.Wait()
	if err := m.ws.Close(); err != nil {
		t.Fatalf("close workspace: %v", err)
	}
	ws, err := overlay.Open(overlay.Options{Root: m.root, StateDir: m.state, Watch: m.watch})
	if err != nil {
		t.Fatal(err)
	}
	m.ws = ws
	if m.d, err = ws.Draft(""); err != nil {
		t.Fatal(err)
	}
	if m.srv, err = Mount(m.mnt, m.d, m.opts); err != nil {
		t.Fatal(err)
	}
}

// requireFuse skips the test when /dev/fuse cannot be opened.
func requireFuse(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("FUSE is not available here: cannot open /dev/fuse: %v", err)
	}
	f.Close()
}

// openFds maps this process's descriptors to what they point to.
func openFds(t testing.TB) map[string]string {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	fds := map[string]string{}
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err == nil {
			fds[e.Name()] = target
		}
	}
	return fds
}

// writeTree creates files below dir: path → text, "/" suffix for a
// directory, "->target" for a symlink.
var writeTree = vfstest.WriteTree

// snapshot describes a tree: path → type, mode and content hash.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := de.Info()
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			desc += " " + hex.EncodeToString(sum[:8])
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffSnapshots lists how two snapshots differ.
func diffSnapshots(a, b map[string]string) []string {
	var out []string
	for p, x := range a {
		if y, ok := b[p]; !ok {
			out = append(out, "-"+p)
		} else if x != y {
			out = append(out, "~"+p+": "+x+" != "+y)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, "+"+p)
		}
	}
	sort.Strings(out)
	return out
}

// statusPaths lists the draft's changed paths as "M path" lines.
func statusPaths(t testing.TB, d *overlay.Draft) []string {
	t.Helper()
	st, err := d.Status()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range st {
		out = append(out, fmt.Sprintf("%s %s", e.Change, e.Path))
	}
	slices.Sort(out)
	return out
}

// shell runs script with sh in dir, which may be inside the mount: the
// shell changes into it after exec, never this process's forked child
// (see go-fuse's deadlock list).
func shell(t testing.TB, dir, script string, env ...string) string {
	t.Helper()
	out, err := shellErr(dir, script, env...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return out
}

func shellErr(dir, script string, env ...string) (string, error) {
	cmd := exec.Command("/bin/sh", "-c", `cd "$0" && `+script, dir)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func mustRead(t testing.TB, p, want string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	if string(b) != want {
		t.Fatalf("read %s: %q, want %q", p, b, want)
	}
}

func lstat(t testing.TB, p string) syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatalf("lstat %s: %v", p, err)
	}
	return st
}

func ino(t testing.TB, p string) uint64 { t.Helper(); return lstat(t, p).Ino }

// direntInos reads a directory's entries with their d_ino.
func direntInos(t testing.TB, f *os.File) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(int(f.Fd()), buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return out
		}
		for b := buf[:n]; len(b) > 0; {
			reclen := int(b[16]) | int(b[17])<<8
			ino := uint64(0)
			for i := 7; i >= 0; i-- {
				ino = ino<<8 | uint64(b[i])
			}
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			out[string(name)] = ino
			b = b[reclen:]
		}
	}
}

func mustReadAt(t testing.TB, f *os.File, want string) {
	t.Helper()
	b := make([]byte, len(want)+16)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("read %s: %v", f.Name(), err)
	}
	if string(b[:n]) != want {
		t.Fatalf("read %s: %q, want %q", f.Name(), b[:n], want)
	}
}
