// Package controltest helps tests check who may use a control socket:
// it runs the test binary again as another user, to listen where a
// daemon's socket would be or to dial one. The other user's process
// needs root to start; tests skip without it.
package controltest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// OtherUID is the second, unprivileged user: nobody.
const OtherUID = 65534

// listenEnv names the socket a listener child listens on.
const listenEnv = "DRAFTFS_TEST_LISTEN"

// Child is the other user's side of ListenAsOther: when this process is
// such a child, it listens and exits. Call it first in TestMain (or
// init) of a package that uses ListenAsOther.
func Child() {
	if p := os.Getenv(listenEnv); p != "" {
		os.Exit(listen(p))
	}
}

// listen listens on path, says "ready", counts the bytes clients send
// until its stdin closes, and prints the count.
func listen(path string) int {
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

// Listener is another user's process listening on a unix socket.
type Listener struct {
	t     testing.TB
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// ListenAsOther starts a Listener on path as OtherUID and returns once
// it listens; Received or the end of the test stops it.
func ListenAsOther(t testing.TB, path string) *Listener {
	t.Helper()
	cmd := AsOther(t, listenEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	l := &Listener{t: t, cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	if !l.out.Scan() || l.out.Text() != "ready" {
		t.Fatalf("the other user's listener: %q", l.out.Text())
	}
	return l
}

// Received stops the listener and returns how many bytes clients sent
// it.
func (l *Listener) Received() int64 {
	l.t.Helper()
	l.stdin.Close()
	l.out.Scan()
	line := l.out.Text()
	n, err := strconv.ParseInt(strings.TrimPrefix(line, "received "), 10, 64)
	if err != nil {
		l.t.Fatalf("the other user's listener said %q", line)
	}
	return n
}

// AsOther is a command that runs a copy of the test binary as OtherUID
// (a copy, where that user can read it) in /, with env as its whole
// environment: the test binary's TestMain decides from env what it does.
func AsOther(t testing.TB, env ...string) *exec.Cmd {
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
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(p)
	cmd.Dir = "/"
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: OtherUID, Gid: OtherUID}}
	return cmd
}
