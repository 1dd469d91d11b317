package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/draftfs/draftfs/protocol/control/controltest"
)

// TestServe: the ready line names the socket and the mount, the mount
// shows the workspace and takes writes into the draft, and SIGTERM
// unmounts and exits 0 (checked by the cleanup).
func TestServe(t *testing.T) {
	f := newFixture(t)
	f.file("a.txt", "disk\n")
	mnt := filepath.Join(f.tmp, "view") // serve creates it
	d := f.serve(mnt)
	sock := f.socket()
	if !strings.Contains(d.ready, "socket "+sock) || !strings.Contains(d.ready, "mounted at "+mnt) {
		t.Fatalf("ready line %q does not name socket %s and mount %s", d.ready, sock, mnt)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "a.txt")); err != nil || string(b) != "disk\n" {
		t.Fatalf("read through the mount: %q %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "a.txt"), []byte("agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := f.disk("a.txt"); got != "disk\n" {
		t.Fatalf("a write through the mount reached the disk: %q", got)
	}
	if r := f.ok("status"); r.out != "M a.txt\n" {
		t.Fatalf("status: %s", r)
	}
	d.stop()
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket is left after the daemon stopped: %v", err)
	}
	if _, err := os.Stat(mnt); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the mount point serve created is left: %v", err)
	}
	// The draft outlives the daemon.
	if r := f.ok("status"); r.out != "M a.txt\n" {
		t.Fatalf("status after the daemon: %s", r)
	}
}

// TestUnmountEndsMount: draftfs unmount of the mount of draftfs mount
// ends that daemon cleanly.
func TestUnmountEndsMount(t *testing.T) {
	needFUSE(t)
	f := newFixture(t)
	mnt := filepath.Join(f.tmp, "view")
	c := f.cmd("mount", mnt)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, "mounted at "+mnt) {
		c.Process.Kill()
		t.Fatalf("ready line %q: %v", line, err)
	}
	f.ok("unmount", mnt)
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("draftfs mount after unmount: %v; stderr: %s", err, &stderr)
		}
	case <-time.After(30 * time.Second):
		c.Process.Kill()
		t.Fatal("draftfs mount did not exit after its mount was unmounted")
	}
	if isMount(mnt) {
		t.Fatal("still mounted")
	}
}

// TestKilledDaemon: after kill -9 of the daemon, every command works on
// the same state without it; the dead mount can be unmounted, and a new
// daemon replaces the stale socket and mounts at the same place.
func TestKilledDaemon(t *testing.T) {
	f := newFixture(t)
	f.file("a.txt", "one\n")
	mnt := filepath.Join(f.tmp, "view")
	d := f.serve(mnt)
	if err := os.WriteFile(filepath.Join(mnt, "a.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "b.txt"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := f.socket()
	d.kill()
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("kill -9 should leave the socket file behind: %v", err)
	}
	// ECONNABORTED where it was served over io_uring: the kernel
	// aborts the connection when the dead daemon's rings go.
	if _, err := os.Stat(mnt); !errors.Is(err, syscall.ENOTCONN) && !errors.Is(err, syscall.ECONNABORTED) {
		t.Fatalf("the killed daemon's mount: %v, want ENOTCONN (ECONNABORTED over io_uring)", err)
	}

	if r := f.ok("status"); r.out != "M a.txt\nA b.txt\n" {
		t.Fatalf("offline status: %s", r)
	}
	if r := f.ok("diff", "a.txt"); !strings.Contains(r.out, "-one\n+two\n") {
		t.Fatalf("offline diff: %s", r)
	}
	if r := f.ok("commit", "a.txt"); !strings.Contains(r.out, "committed 1 change") {
		t.Fatalf("offline commit: %s", r)
	}
	if f.disk("a.txt") != "two\n" {
		t.Fatalf("disk after the offline commit: %q", f.disk("a.txt"))
	}
	if r := f.ok("log"); !strings.Contains(r.out, "mount   write     a.txt") || !strings.Contains(r.out, "cli     commit") {
		t.Fatalf("offline log: %s", r)
	}
	f.ok("undo")
	if f.disk("a.txt") != "one\n" {
		t.Fatalf("disk after the offline undo: %q", f.disk("a.txt"))
	}
	if r := f.ok("buffer", "list"); r.out != "" {
		t.Fatalf("buffer list without a daemon: %s", r)
	}

	// A new daemon at the same mount point, over the stale socket.
	d2 := f.serve(mnt)
	if b, err := os.ReadFile(filepath.Join(mnt, "b.txt")); err != nil || string(b) != "new\n" {
		t.Fatalf("the new daemon's mount: %q %v", b, err)
	}
	c := f.client()
	st, err := c.Status("")
	if err != nil || len(st) != 2 {
		t.Fatalf("status through the new daemon's socket: %v %v", st, err)
	}
	d2.stop()

	// draftfs unmount clears a dead mount.
	d3 := f.serve(mnt)
	d3.kill()
	f.ok("unmount", mnt)
	if isMount(mnt) {
		t.Fatal("draftfs unmount left the dead mount")
	}
}

// TestStaleSocket: a socket file nobody listens on does not pass for a
// daemon, and serve replaces it.
func TestStaleSocket(t *testing.T) {
	f := newFixture(t)
	sock := f.socket()
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Stat(sock); err != nil {
		t.Fatal(err)
	}
	if r := f.ok("status"); r.out != "" {
		t.Fatalf("status with a stale socket: %s", r)
	}
	f.serve("")
	if _, err := f.client().Status(""); err != nil {
		t.Fatalf("the new daemon does not answer: %v", err)
	}
}

// TestSecondDaemon: a second daemon for the workspace is refused with a
// message naming the first; the first keeps working.
func TestSecondDaemon(t *testing.T) {
	f := newFixture(t)
	d := f.serve("")
	r := f.run("serve")
	if r.code != 1 || !strings.Contains(r.err, "already running") ||
		!strings.Contains(r.err, fmt.Sprintf("pid %d", d.cmd.Process.Pid)) || strings.Count(r.err, "\n") != 1 {
		t.Fatalf("second serve: %s", r)
	}
	if _, err := f.client().Status(""); err != nil {
		t.Fatalf("the first daemon after the refusal: %v", err)
	}
}

// TestSocketPermissions: the socket is 0600 in a 0700 directory, so
// another user cannot connect; with the permissions opened up, the
// daemon still refuses them (SO_PEERCRED).
func TestSocketPermissions(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to act as another user")
	}
	f := newFixture(t)
	f.serve("")
	sock := f.socket()
	for p, want := range map[string]os.FileMode{sock: 0o600, filepath.Dir(sock): 0o700} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	if out := dialAsOther(t, sock); !strings.Contains(out, "permission denied") {
		t.Fatalf("another user connecting: %q, want permission denied", out)
	}
	// Open the way: the daemon itself must still refuse.
	for _, p := range []string{f.tmp, f.state, filepath.Dir(filepath.Dir(sock)), filepath.Dir(sock)} {
		os.Chmod(p, 0o755)
	}
	os.Chmod(sock, 0o777)
	out := dialAsOther(t, sock)
	if !strings.Contains(out, `"code":-32001`) || !strings.Contains(out, "serves uid 0 only") {
		t.Fatalf("another user, permissions open: %q, want a refusal", out)
	}
	if _, err := f.client().Status(""); err != nil {
		t.Fatalf("the owner after the refusal: %v", err)
	}
}

// dialAsOther runs this test binary as another user to connect to sock
// and send a request; it returns what happened.
func dialAsOther(t *testing.T, sock string) string {
	t.Helper()
	out, err := controltest.AsOther(t, "DRAFTFS_TEST_DIAL="+sock).CombinedOutput()
	if err != nil {
		t.Fatalf("peer process: %v: %s", err, out)
	}
	return string(out)
}

// dialAs is the peer process: it connects, sends a request and prints
// the answer or the error.
func dialAs(sock string) int {
	c, err := net.Dial("unix", sock)
	if err != nil {
		fmt.Println("dial:", err)
		return 0
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintln(c, `{"jsonrpc":"2.0","id":1,"method":"draft/status"}`)
	line, err := bufio.NewReader(c).ReadString('\n')
	fmt.Println("answer:", line, err)
	return 0
}

// TestLongStatePath: when the state directory is too deep for a socket
// address, the socket moves to a short path, which draftfs socket
// prints and every command finds.
func TestLongStatePath(t *testing.T) {
	f := newFixture(t)
	f.state = filepath.Join(f.tmp, strings.Repeat("s", 120))
	run := filepath.Join(f.tmp, "run")
	t.Setenv("XDG_RUNTIME_DIR", run)
	f.serve("")
	sock := f.socket()
	if !strings.HasPrefix(sock, run+"/draftfs/") || len(sock) > 107 {
		t.Fatalf("socket %s", sock)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("no socket at %s: %v", sock, err)
	}
	if _, err := f.client().Status(""); err != nil {
		t.Fatal(err)
	}
}

// TestServePassthrough: `serve --passthrough` mounts in passthrough
// mode: a file read through the mount is handed to the kernel as a
// backing file (the --debug log says so), writes still land in the
// draft, and the disk keeps its content.
func TestServePassthrough(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("FUSE passthrough needs CAP_SYS_ADMIN")
	}
	f := newFixture(t)
	f.file("a.txt", "on disk\n")
	mnt := filepath.Join(f.tmp, "view")
	d := f.serve(mnt, "--passthrough", "--debug")
	b, err := os.ReadFile(filepath.Join(mnt, "a.txt"))
	if err != nil || string(b) != "on disk\n" {
		t.Fatalf("read through the mount: %q, %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "a.txt"), []byte("draft\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := f.ok("status"); r.out != "M a.txt\n" {
		t.Fatalf("status: %s", r)
	}
	d.stop()
	if log := d.stderr.String(); !strings.Contains(log, "BACKING_OPEN") || strings.Contains(log, "passthrough unavailable") {
		t.Errorf("no backing file was registered; the daemon's log:\n%s", lastLines(log, 20))
	}
	if f.disk("a.txt") != "on disk\n" {
		t.Errorf("disk: %q", f.disk("a.txt"))
	}
}

// lastLines is the end of a long text.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
