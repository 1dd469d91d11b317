package acp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/agent"
	"github.com/draftfs/draftfs/protocol/internal/lines"
)

// With DRAFTFS_ACP_RELAY set, the test binary is an agent that relays
// its stdin and stdout to a Unix socket where the test plays the agent,
// and exits with DRAFTFS_ACP_RELAY_EXIT when the test hangs up.
func TestMain(m *testing.M) {
	if sock := os.Getenv("DRAFTFS_ACP_RELAY"); sock != "" {
		os.Exit(relay(sock))
	}
	code := m.Run()
	removeBinary()
	os.Exit(code)
}

func relay(sock string) int {
	c, err := net.Dial("unix", sock)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 2
	}
	go func() {
		io.Copy(c, os.Stdin)
		c.(*net.UnixConn).CloseWrite()
	}()
	io.Copy(os.Stdout, c)
	code, _ := strconv.Atoi(os.Getenv("DRAFTFS_ACP_RELAY_EXIT"))
	return code
}

// workspaces opens engines for the proxy's Options.Open and lets tests
// reach them (buffers, drafts). Closed by the test's cleanup.
type workspaces struct {
	t      testing.TB
	state  string
	mu     sync.Mutex
	byDir  map[string]*overlay.Workspace
	opened []string // "dir draft", in order
}

func newWorkspaces(t testing.TB) *workspaces {
	w := &workspaces{t: t, state: t.TempDir(), byDir: map[string]*overlay.Workspace{}}
	t.Cleanup(func() {
		for _, ws := range w.byDir {
			ws.Close()
		}
	})
	return w
}

func (w *workspaces) workspace(dir string) *overlay.Workspace {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ws, ok := w.byDir[dir]; ok {
		return ws
	}
	ws, err := overlay.Open(overlay.Options{Root: dir, StateDir: overlay.StateDir(w.state, dir)})
	if err != nil {
		w.t.Fatal(err)
	}
	w.byDir[dir] = ws
	return ws
}

func (w *workspaces) open(dir, draft string) (agent.Files, error) {
	w.mu.Lock()
	w.opened = append(w.opened, dir+" "+draft)
	w.mu.Unlock()
	d, err := w.workspace(dir).Draft(draft)
	if err != nil {
		return nil, err
	}
	return agent.NewLocal(d, overlay.SourceACP), nil
}

func (w *workspaces) status(t testing.TB, dir, draft string) string {
	t.Helper()
	d, err := w.workspace(dir).Draft(draft)
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.Status()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, s := range st {
		fmt.Fprintf(&b, "%s %s\n", s.Letter(), s.Path)
	}
	return b.String()
}

// watchdog bounds how long a peer waits for a line. It catches a hang,
// it is not a timing check: a 32 MiB line under -race on a loaded
// machine takes tens of seconds.
const watchdog = 2 * time.Minute

// peer is one side of the proxy as the test plays it: whole lines out,
// whole lines in.
type peer struct {
	t     testing.TB
	name  string
	w     io.WriteCloser
	lines chan []byte
}

func newPeer(t testing.TB, name string, r io.Reader, w io.WriteCloser) *peer {
	p := &peer{t: t, name: name, w: w, lines: make(chan []byte, 64)}
	go func() {
		defer close(p.lines)
		lr := lines.NewReader(r, 2*MaxMessage)
		for {
			line, err := lr.Next()
			if err != nil {
				return
			}
			p.lines <- bytes.Clone(line)
		}
	}()
	return p
}

func (p *peer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.w, line+"\n"); err != nil {
		p.t.Fatalf("%s: send: %v", p.name, err)
	}
}

func (p *peer) recv() string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("%s: connection closed", p.name)
		}
		return string(l)
	case <-time.After(watchdog):
		p.t.Fatalf("%s: nothing received", p.name)
	}
	return ""
}

// expect receives one line and checks it byte for byte.
func (p *peer) expect(want string) {
	p.t.Helper()
	if got := p.recv(); got != want {
		p.t.Fatalf("%s received\n%s\nwant\n%s", p.name, got, want)
	}
}

// closed waits for the other side to hang up.
func (p *peer) closed() {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if ok {
			p.t.Fatalf("%s: received %s, want the end", p.name, l)
		}
	case <-time.After(watchdog):
		p.t.Fatalf("%s: still open", p.name)
	}
}

// rig is a proxy run in the test process between an editor and an agent
// the test plays.
type rig struct {
	t      testing.TB
	ws     *workspaces
	editor *peer
	agent  *peer
	done   chan struct{}
	status int
	err    error
}

type rigOptions struct {
	draftPerSession bool
	exitStatus      int // of the relay agent once the test hangs up
	terminal        func(dir, draft string) (string, []string)
	agent           []string // instead of the relay
	stopTimeout     time.Duration
}

func startRig(t testing.TB, ro rigOptions) *rig {
	t.Helper()
	sockDir, err := os.MkdirTemp("", "acp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sock := filepath.Join(sockDir, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	editorInR, editorInW, _ := os.Pipe()   // editor → proxy
	editorOutR, editorOutW, _ := os.Pipe() // proxy → editor
	r := &rig{t: t, ws: newWorkspaces(t), done: make(chan struct{})}
	agent := ro.agent
	if agent == nil {
		agent = []string{"/usr/bin/env", "GORACE=atexit_sleep_ms=0", "DRAFTFS_ACP_RELAY=" + sock, "DRAFTFS_ACP_RELAY_EXIT=" + strconv.Itoa(ro.exitStatus), os.Args[0], "-test.run=^$"}
	}
	opts := Options{
		Agent:           agent,
		Stdin:           editorInR,
		Stdout:          editorOutW,
		Stderr:          os.Stderr,
		Open:            r.ws.open,
		DraftPerSession: ro.draftPerSession,
		Terminal:        ro.terminal,
		StopTimeout:     ro.stopTimeout,
	}
	go func() {
		r.status, r.err = Run(context.Background(), opts)
		editorOutW.Close()
		close(r.done)
	}()
	r.editor = newPeer(t, "editor", editorOutR, editorInW)
	t.Cleanup(func() {
		editorInW.Close()
		r.wait()
		editorOutR.Close()
	})
	if ro.agent != nil {
		return r
	}
	ln.(*net.UnixListener).SetDeadline(time.Now().Add(20 * time.Second))
	c, err := ln.Accept()
	if err != nil {
		t.Fatalf("the agent did not connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	r.agent = newPeer(t, "agent", c, c.(*net.UnixConn))
	return r
}

// wait returns Run's status once it has returned.
func (r *rig) wait() int {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		r.t.Fatal("the proxy did not return")
	}
	if r.err != nil {
		r.t.Fatalf("Run: %v", r.err)
	}
	return r.status
}

// session runs initialize and session/new for a workspace directory and
// returns the directory.
func (r *rig) session(id, initParams string) string {
	r.t.Helper()
	dir := r.t.TempDir()
	r.ws.workspace(dir)
	r.editor.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":` + initParams + `}`)
	r.agent.recv()
	r.agent.send(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}`)
	r.editor.expect(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}`)
	r.editor.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, dir))
	r.agent.recv()
	r.agent.send(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"` + id + `"}}`)
	r.editor.expect(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"` + id + `"}}`)
	return dir
}
