package control

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// otherUID is the second, unprivileged user the socket tests listen as.
const otherUID = 65534

func init() {
	// The child of TestClientRefusesForeignSocket: another user's
	// process listening where a daemon's socket would be.
	if p := os.Getenv("DRAFTFS_TEST_LISTEN"); p != "" {
		os.Exit(listenAsOther(p))
	}
}

// listenAsOther listens on path, says "ready", counts the bytes any client sends until its
// stdin closes, and prints the count.
func listenAsOther(path string) int {
	l, err := net.Listen("unix", path)
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	var got atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				n, _ := io.Copy(io.Discard, c)
				got.Add(n)
			}()
		}
	}()
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	fmt.Println("received", got.Load())
	return 0
}

// TestClientRefusesForeignSocket: where another user made the socket
// directory, can write to it, or listens behind a socket that looks like
// ours, the client refuses before sending anything and says why.
func TestClientRefusesForeignSocket(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a listener as another user")
	}
	exe := copyTestBinary(t)
	top, err := os.MkdirTemp("", "dfs-foreign")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	os.Chmod(top, 0o755)
	// The other user's directory, as /tmp/draftfs-UID made first by
	// someone else would be.
	otherDir := filepath.Join(top, "other")
	must(t, os.Mkdir(otherDir, 0o700))
	must(t, os.Chown(otherDir, otherUID, otherUID))
	for _, c := range []struct {
		name   string
		listen string // where the other user listens
		dial   string // where the client connects
		setup  func(t *testing.T)
		want   string
	}{
		{
			name: "their directory", listen: filepath.Join(otherDir, "a.sock"), dial: filepath.Join(otherDir, "a.sock"),
			want: "belongs to uid 65534",
		},
		{
			name: "a directory others can write", listen: filepath.Join(top, "open", "b.sock"), dial: filepath.Join(top, "open", "b.sock"),
			setup: func(t *testing.T) {
				os.Mkdir(filepath.Join(top, "open"), 0o777)
				os.Chmod(filepath.Join(top, "open"), 0o777)
			},
			want: "can be written by other users",
		},
		{
			// The socket file is ours in our private directory (a hard
			// link, given to us), but the other user's process accepts.
			name: "their listener", listen: filepath.Join(otherDir, "c.sock"), dial: filepath.Join(top, "mine", "c.sock"),
			setup: func(t *testing.T) { must(t, os.Mkdir(filepath.Join(top, "mine"), 0o700)) },
			want:  "runs as uid 65534",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.setup != nil {
				c.setup(t)
			}
			cmd := exec.Command(exe)
			cmd.Dir = "/"
			cmd.Env = []string{"DRAFTFS_TEST_LISTEN=" + c.listen}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherUID}}
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			must(t, cmd.Start())
			defer cmd.Wait()
			out := bufio.NewScanner(stdout)
			if !out.Scan() || out.Text() != "ready" {
				stdin.Close()
				t.Fatalf("listener: %q", out.Text())
			}
			if c.dial != c.listen {
				must(t, os.Link(c.listen, c.dial))
				must(t, os.Lchown(c.dial, 0, 0))
			}
			cl, err := Dial(c.dial)
			if err == nil {
				// What an editor would send first; no answer comes.
				cl.Notify(t.Context(), "buffer/didOpen", map[string]any{"path": "secret.go", "version": 1, "text": "unsaved secret"})
				cl.Close()
			}
			stdin.Close()
			out.Scan()
			if !errors.Is(err, ErrForeignSocket) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing was sent") {
				t.Errorf("dial: %v, want ErrForeignSocket saying %q", err, c.want)
			}
			if out.Text() != "received 0" {
				t.Errorf("the other user's listener: %s", out.Text())
			}
		})
	}
}

// copyTestBinary copies the test binary where the other user can run it.
func copyTestBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "dfs-peer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "peer.test")
	must(t, os.WriteFile(p, b, 0o755))
	return p
}
