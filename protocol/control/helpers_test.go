package control

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/draftfs/draftfs/overlay"
)

// env is a workspace served by a Server.
type env struct {
	root string
	ws   *overlay.Workspace
	srv  *Server

	mu   sync.Mutex
	logs []string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	root := t.TempDir()
	ws, err := overlay.Open(overlay.Options{Root: root, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{root: ws.Root(), ws: ws}
	e.srv = NewServer(ws, ServerOptions{Version: "test", Logf: func(format string, args ...any) {
		e.mu.Lock()
		e.logs = append(e.logs, format)
		e.mu.Unlock()
	}})
	t.Cleanup(func() {
		e.srv.Close()
		ws.Close()
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, l := range e.logs {
			if strings.Contains(l, "panic") {
				t.Errorf("the server logged a panic: %s", l)
			}
		}
	})
	return e
}

// write puts a file on disk in the workspace.
func (e *env) write(t testing.TB, key, text string) {
	t.Helper()
	p := filepath.Join(e.root, key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// client connects a Client.
func (e *env) client(t testing.TB) *Client {
	c, err := e.srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// raw is a connection that speaks lines.
type raw struct {
	t testing.TB
	c net.Conn
	r *bufio.Reader
}

func (e *env) raw(t testing.TB) *raw {
	a, b := net.Pipe()
	e.srv.ServeConn(a)
	t.Cleanup(func() { b.Close() })
	return &raw{t: t, c: b, r: bufio.NewReaderSize(b, 1<<20)}
}

func (r *raw) send(line string) {
	r.t.Helper()
	r.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.c.Write([]byte(line + "\n")); err != nil {
		r.t.Fatalf("send: %v", err)
	}
}

// reply is any message from the server.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	JSONRPC string `json:"jsonrpc"`
}

// next reads the next message, notifications included.
func (r *raw) next() reply {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(time.Minute))
	line, err := r.r.ReadBytes('\n')
	if err != nil {
		r.t.Fatalf("read: %v", err)
	}
	var m reply
	if err := json.Unmarshal(line, &m); err != nil {
		r.t.Fatalf("reply %q: %v", line, err)
	}
	if m.JSONRPC != "2.0" {
		r.t.Fatalf("reply %q: no jsonrpc 2.0", line)
	}
	return m
}

// answer reads messages until a response (skipping notifications).
func (r *raw) answer() reply {
	r.t.Helper()
	for {
		m := r.next()
		if m.Method == "" {
			return m
		}
	}
}
