//go:build linux

package fusefs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/draftfs/draftfs/daemon/mounts"
	"github.com/draftfs/draftfs/overlay"
)

// serveCommand makes the test binary a mount server: WORKSPACE STATE
// MOUNT. It prints "ready" once mounted and unmounts on SIGTERM.
const serveCommand = "__serve-test"

func serveForTest(args []string) int {
	ws, err := overlay.Open(overlay.Options{Root: args[0], StateDir: args[1]})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer ws.Close()
	d, err := ws.Draft("")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv, err := Mount(args[2], d, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	fmt.Println("ready")
	<-sigs
	if err := srv.Unmount(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv.Wait()
	return 0
}

// startServer runs a mount server in another process and waits for its
// ready line.
func startServer(t *testing.T) (cmd *exec.Cmd, root, mnt string) {
	t.Helper()
	requireFuse(t)
	base := t.TempDir()
	root, mnt = filepath.Join(base, "ws"), filepath.Join(base, "mnt")
	writeTree(t, root, map[string]string{"f.txt": "text\n"})
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command("/proc/self/exe", serveCommand, root, filepath.Join(base, "state"), mnt)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if typ, _ := mounts.At(mnt); typ != "" {
			syscall.Unmount(mnt, syscall.MNT_DETACH)
			t.Errorf("mount %s left behind", mnt)
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("server: %q, %v", line, err)
	}
	return cmd, root, mnt
}

func TestServerSIGTERM(t *testing.T) {
	cmd, _, mnt := startServer(t)
	shell(t, mnt, "test \"$(cat f.txt)\" = text")
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("server exit: %v", err)
	}
	if typ, _ := mounts.At(mnt); typ != "" {
		t.Errorf("still mounted after SIGTERM")
	}
}

func TestUnmountDeadServer(t *testing.T) {
	cmd, _, mnt := startServer(t)
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := os.ReadDir(mnt); !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("listing a dead mount: %v, want ENOTCONN", err)
	}
	if err := mounts.Unmount(mnt); err != nil {
		t.Fatalf("Unmount: %v", err)
	}
	if typ, _ := mounts.At(mnt); typ != "" {
		t.Errorf("still mounted")
	}
	if _, err := os.Stat(mnt); err != nil {
		t.Errorf("mount point after unmount: %v", err)
	}
}

func TestUnmountRefusesOtherMounts(t *testing.T) {
	if err := mounts.Unmount("/proc"); err == nil || !strings.Contains(err.Error(), "not a draftfs one") {
		t.Errorf("mounts.Unmount(/proc): %v", err)
	}
	if err := mounts.Unmount(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a mount point") {
		t.Errorf("Unmount of a plain directory: %v", err)
	}
}

func TestUnmountBusyDetaches(t *testing.T) {
	requireFuse(t)
	base := t.TempDir()
	root, mnt := filepath.Join(base, "ws"), filepath.Join(base, "mnt")
	writeTree(t, root, map[string]string{"f.txt": "text\n"})
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	ws, err := overlay.Open(overlay.Options{Root: root, StateDir: filepath.Join(base, "state")})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	d, err := ws.Draft("")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Mount(mnt, d, Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(mnt, "f.txt"))
	if err != nil {
		t.Fatal(err)
	}
	err = srv.Unmount()
	if !errors.Is(err, mounts.ErrDetached) {
		f.Close()
		t.Fatalf("Unmount of a busy mount: %v, want mounts.ErrDetached", err)
	}
	if typ, _ := mounts.At(mnt); typ != "" {
		t.Errorf("a detached mount is still in the mount table")
	}
	if b, err := io.ReadAll(f); err != nil || string(b) != "text\n" {
		t.Errorf("the open file after the detach: %q, %v", b, err)
	}
	done := make(chan struct{})
	go func() { srv.Wait(); close(done) }()
	select {
	case <-done:
		t.Fatal("Wait returned while the mount was in use")
	case <-time.After(50 * time.Millisecond):
	}
	f.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after the last user left")
	}
}
