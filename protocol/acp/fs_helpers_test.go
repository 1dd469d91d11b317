package acp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/agent"
)

// engine is a workspace on a temporary directory with its main draft.
type engine struct {
	dir   string
	ws    *overlay.Workspace
	draft *overlay.Draft
	files agent.Files
}

func newEngine(t testing.TB) *engine {
	t.Helper()
	dir := t.TempDir()
	ws, err := overlay.Open(overlay.Options{Root: dir, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	d, err := ws.Draft("")
	if err != nil {
		t.Fatal(err)
	}
	return &engine{dir: ws.Root(), ws: ws, draft: d, files: agent.NewLocal(d, overlay.SourceACP)}
}

func (e *engine) disk(t testing.TB, rel, text string) string {
	t.Helper()
	p := filepath.Join(e.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// handler serves one session "s1" whose roots are the given engines'
// directories (the first is cwd).
func handler(roots ...Root) *FS {
	return &FS{Session: func(id string) (*Session, error) {
		if id != "s1" {
			return nil, nil
		}
		return &Session{Roots: roots}, nil
	}}
}

func call(t testing.TB, h *FS, method string, params any) (json.RawMessage, *jsonrpc2.Error) {
	t.Helper()
	b, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	return h.Serve(context.Background(), method, b)
}

func read(t testing.TB, h *FS, params map[string]any) (string, *jsonrpc2.Error) {
	t.Helper()
	res, rerr := call(t, h, MethodReadTextFile, params)
	if rerr != nil {
		return "", rerr
	}
	var r struct{ Content *string }
	if err := json.Unmarshal(res, &r); err != nil || r.Content == nil {
		t.Fatalf("result %s: %v", res, err)
	}
	return *r.Content, nil
}

func wantErr(t testing.TB, rerr *jsonrpc2.Error, code int64, contains string) {
	t.Helper()
	if rerr == nil {
		t.Fatalf("no error, want %d %q", code, contains)
	}
	if rerr.Code != code || !strings.Contains(rerr.Message, contains) {
		t.Fatalf("error %d %q, want %d containing %q", rerr.Code, rerr.Message, code, contains)
	}
}

func dataOf(t testing.TB, rerr *jsonrpc2.Error) map[string]any {
	t.Helper()
	if rerr.Data == nil {
		t.Fatalf("error %q has no data", rerr.Message)
	}
	var m map[string]any
	if err := json.Unmarshal(*rerr.Data, &m); err != nil {
		t.Fatalf("data %s: %v", *rerr.Data, err)
	}
	return m
}
