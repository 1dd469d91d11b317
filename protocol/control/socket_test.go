package control

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSocketPath(t *testing.T) {
	short := "/home/u/.local/state/draftfs/app-0123456789ab"
	if got := SocketPath(short); got != short+"/control.sock" {
		t.Errorf("short: %s", got)
	}
	long := "/" + strings.Repeat("x", 120)
	run := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", run)
	got := SocketPath(long)
	if filepath.Dir(got) != filepath.Join(run, "draftfs") || len(got) > sunPathMax {
		t.Errorf("long, with XDG_RUNTIME_DIR: %s", got)
	}
	if SocketPath(long+"y") == got {
		t.Error("two long state directories share a socket")
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	if got := SocketPath(long); !strings.HasPrefix(got, filepath.Join(os.TempDir(), "draftfs-")) || len(got) > sunPathMax {
		t.Errorf("long, without XDG_RUNTIME_DIR: %s", got)
	}
}

// TestListen: modes, a stale socket replaced, a live one refused.
func TestListen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	path := filepath.Join(dir, "control.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, dir: 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %v", p, fi.Mode(), err, want)
		}
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if _, err := Listen(path); !errors.Is(err, ErrRunning) || !strings.Contains(err.Error(), "pid") {
		t.Errorf("a second listener: %v", err)
	}
	// A daemon that died leaves its socket file: nobody accepts on it.
	l.SetUnlinkOnClose(false)
	l.Close()
	if _, err := dialSocket(path); !errors.Is(err, ErrNoDaemon) {
		t.Errorf("dialing a stale socket: %v", err)
	}
	l2, err := Listen(path)
	if err != nil {
		t.Fatalf("replacing a stale socket: %v", err)
	}
	l2.Close()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket outlives its listener: %v", err)
	}
	if _, err := dialSocket(path); !errors.Is(err, ErrNoDaemon) {
		t.Errorf("dialing no socket: %v", err)
	}
	// Something else at the path is not taken for a socket.
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("a file at the socket's path: %v", err)
	}
}

// TestPrivateDir: a shared directory is made private; a file or another
// user's directory is refused.
func TestPrivateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := privateDir(dir); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o600)
	if err := privateDir(file); err == nil {
		t.Error("a file taken for the socket directory")
	}
	if os.Getuid() == 0 {
		other := filepath.Join(t.TempDir(), "o")
		os.Mkdir(other, 0o700)
		os.Chown(other, 65534, 65534)
		if err := privateDir(other); err == nil || !strings.Contains(err.Error(), "uid 65534") {
			t.Errorf("another user's directory: %v", err)
		}
	}
}
