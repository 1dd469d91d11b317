package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/agent"
)

func TestReadMergedView(t *testing.T) {
	e := newEngine(t)
	h := handler(Root{Dir: e.dir, Files: e.files})
	p := e.disk(t, "src/a.txt", "disk\n")

	got, rerr := read(t, h, map[string]any{"sessionId": "s1", "path": p})
	if rerr != nil || got != "disk\n" {
		t.Fatalf("disk read = %q, %v", got, rerr)
	}
	// An unsaved buffer wins over disk, byte for byte.
	buf := "buffer\r\nno final newline \x7f é"
	if err := e.ws.Buffers().Open("src/a.txt", 1, []byte(buf)); err != nil {
		t.Fatal(err)
	}
	if got, rerr = read(t, h, map[string]any{"sessionId": "s1", "path": p}); rerr != nil || got != buf {
		t.Fatalf("buffer read = %q, %v", got, rerr)
	}
	if got, rerr = read(t, h, map[string]any{"sessionId": "s1", "path": p, "line": 2, "limit": 1}); rerr != nil || got != "no final newline \x7f é" {
		t.Fatalf("line 2 = %q, %v", got, rerr)
	}
	// The draft wins over the buffer.
	if _, rerr := call(t, h, MethodWriteTextFile, map[string]any{"sessionId": "s1", "path": p, "content": "draft\n"}); rerr != nil {
		t.Fatal(rerr)
	}
	if got, rerr = read(t, h, map[string]any{"sessionId": "s1", "path": p, "line": nil, "limit": nil}); rerr != nil || got != "draft\n" {
		t.Fatalf("draft read = %q, %v", got, rerr)
	}
}

func TestReadLineLimit(t *testing.T) {
	e := newEngine(t)
	h := handler(Root{Dir: e.dir, Files: e.files})
	p := e.disk(t, "foo", "one\ntwo\nthree\nfour\n")
	for _, tt := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"line": 3}, "three\nfour\n"},
		{map[string]any{"limit": 2}, "one\ntwo\n"},
		{map[string]any{"line": 2, "limit": 2}, "two\nthree\n"},
		{map[string]any{"line": 0, "limit": 1}, "one\n"},
		{map[string]any{"line": 5}, ""},
		{map[string]any{"limit": 0}, ""},
	} {
		tt.params["sessionId"], tt.params["path"] = "s1", p
		got, rerr := read(t, h, tt.params)
		if rerr != nil || got != tt.want {
			t.Errorf("%v: %q, %v; want %q", tt.params, got, rerr, tt.want)
		}
	}
	_, rerr := read(t, h, map[string]any{"sessionId": "s1", "path": p, "line": 6, "limit": 2})
	wantErr(t, rerr, jsonrpc2.CodeInvalidParams, "line 6")
	var data string
	if err := json.Unmarshal(*rerr.Data, &data); err != nil || data != "Attempting to read beyond the end of the file, line 5:0" {
		t.Fatalf("data %s", *rerr.Data)
	}
}

func TestReadErrors(t *testing.T) {
	e := newEngine(t)
	other := t.TempDir()
	h := handler(Root{Dir: e.dir, Files: e.files})
	p := e.disk(t, "ok.txt", "ok\n")
	e.disk(t, "dir/x", "x")
	os.WriteFile(filepath.Join(other, "secret"), []byte("secret"), 0o644)
	if err := os.Symlink(filepath.Join(other, "secret"), filepath.Join(e.dir, "escape")); err != nil {
		t.Fatal(err)
	}
	e.disk(t, "bin", "\x89PNG\r\n\x00\x00")
	e.disk(t, "latin1", "caf\xe9\n")
	big := make([]byte, MaxFileSize+1)
	for i := range big {
		big[i] = 'a'
	}
	e.disk(t, "big", string(big))
	ctl := bytes.Repeat([]byte{1}, MaxMessage/6+1) // each byte encodes as \u0001
	e.disk(t, "controls", "first line\n"+string(ctl))

	notFound := func(path, contains string) {
		t.Helper()
		_, rerr := read(t, h, map[string]any{"sessionId": "s1", "path": path})
		wantErr(t, rerr, CodeResourceNotFound, contains)
		if d := dataOf(t, rerr); d["uri"] != path {
			t.Fatalf("%s: data %v, want uri", path, d)
		}
	}
	notFound(filepath.Join(e.dir, "missing.txt"), "no such file")
	notFound(filepath.Join(e.dir, "nodir", "missing.txt"), "no such file")
	notFound(filepath.Join(other, "secret"), "outside the session's directories")
	notFound(e.dir+"/../"+filepath.Base(other)+"/secret", "outside the session's directories")
	notFound(filepath.Join(e.dir, "escape"), "outside")
	notFound(filepath.Join(e.dir, "ok.txt\x00"), "outside")

	_, rerr := read(t, h, map[string]any{"sessionId": "nope", "path": p})
	wantErr(t, rerr, CodeResourceNotFound, "unknown session")
	if d := dataOf(t, rerr); d["sessionId"] != "nope" {
		t.Fatalf("data %v", d)
	}

	for _, tt := range []struct {
		params   any
		code     int64
		contains string
	}{
		{map[string]any{"sessionId": "s1", "path": "ok.txt"}, jsonrpc2.CodeInvalidParams, "not absolute"},
		{map[string]any{"sessionId": "s1"}, jsonrpc2.CodeInvalidParams, "required"},
		{map[string]any{"path": p}, jsonrpc2.CodeInvalidParams, "required"},
		{map[string]any{"sessionId": 5, "path": p}, jsonrpc2.CodeInvalidParams, "Invalid params"},
		{map[string]any{"sessionId": "s1", "path": p, "line": -1}, jsonrpc2.CodeInvalidParams, "numbered from 1"},
		{map[string]any{"sessionId": "s1", "path": p, "line": 1.5}, jsonrpc2.CodeInvalidParams, "Invalid params"},
		{map[string]any{"sessionId": "s1", "path": p, "limit": -2}, jsonrpc2.CodeInvalidParams, "0 or more"},
		{[]int{1}, jsonrpc2.CodeInvalidParams, "Invalid params"},
		{nil, jsonrpc2.CodeInvalidParams, "required"},
		{map[string]any{"sessionId": "s1", "path": filepath.Join(e.dir, "dir")}, jsonrpc2.CodeInternalError, "is a directory"},
		{map[string]any{"sessionId": "s1", "path": filepath.Join(e.dir, "bin")}, jsonrpc2.CodeInternalError, "binary file"},
		{map[string]any{"sessionId": "s1", "path": filepath.Join(e.dir, "latin1")}, jsonrpc2.CodeInternalError, "not valid UTF-8"},
		{map[string]any{"sessionId": "s1", "path": filepath.Join(e.dir, "big")}, jsonrpc2.CodeInternalError, "larger than 16 MiB"},
		{map[string]any{"sessionId": "s1", "path": filepath.Join(e.dir, "controls")}, jsonrpc2.CodeInternalError, "read it in pieces"},
	} {
		_, rerr := call(t, h, MethodReadTextFile, tt.params)
		wantErr(t, rerr, tt.code, tt.contains)
	}
	// A piece of that file fits.
	if got, rerr := read(t, h, map[string]any{"sessionId": "s1", "path": filepath.Join(e.dir, "controls"), "limit": 1}); rerr != nil || got != "first line\n" {
		t.Fatalf("controls, limit 1: %q, %v", got, rerr)
	}
	_, rerr = h.Serve(context.Background(), MethodReadTextFile, nil)
	wantErr(t, rerr, jsonrpc2.CodeInvalidParams, "params are missing")
	_, rerr = h.Serve(context.Background(), "fs/delete", []byte(`{}`))
	wantErr(t, rerr, jsonrpc2.CodeMethodNotFound, "fs/delete")

	broken := &FS{Session: func(string) (*Session, error) { return nil, errors.New("cannot open the state directory") }}
	_, rerr = call(t, broken, MethodReadTextFile, map[string]any{"sessionId": "s1", "path": p})
	wantErr(t, rerr, jsonrpc2.CodeInternalError, "cannot open the state directory")
}

func TestWrite(t *testing.T) {
	e := newEngine(t)
	h := handler(Root{Dir: e.dir, Files: e.files})
	e.disk(t, "keep.txt", "disk\n")
	write := func(rel, content string) *jsonrpc2.Error {
		t.Helper()
		res, rerr := call(t, h, MethodWriteTextFile, map[string]any{"sessionId": "s1", "path": filepath.Join(e.dir, rel), "content": content})
		if rerr == nil && string(res) != "{}" {
			t.Fatalf("result %s", res)
		}
		return rerr
	}
	if rerr := write("new/deep/file.go", "package x\n"); rerr != nil {
		t.Fatal(rerr)
	}
	if rerr := write("empty", ""); rerr != nil {
		t.Fatal(rerr)
	}
	if rerr := write("keep.txt", "agent\n"); rerr != nil {
		t.Fatal(rerr)
	}
	for _, rel := range []string{"new", "empty"} {
		if _, err := os.Lstat(filepath.Join(e.dir, rel)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s reached the disk: %v", rel, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "keep.txt")); string(b) != "disk\n" {
		t.Errorf("disk changed: %q", b)
	}
	st, err := e.draft.Status()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, s := range st {
		lines = append(lines, s.Letter()+" "+s.Path)
	}
	if got := strings.Join(lines, ","); got != "A empty,M keep.txt,A new/deep/file.go" {
		t.Fatalf("status %s", got)
	}
	if b, err := e.files.ReadFile("empty", 0); err != nil || len(b) != 0 {
		t.Fatalf("empty file: %q, %v", b, err)
	}

	wantErr(t, write("keep.txt/child", "x"), jsonrpc2.CodeInternalError, "not a directory")
	wantErr(t, write("new", "x"), jsonrpc2.CodeInternalError, "is a directory")
	wantErr(t, write(strings.Repeat("n", 300), "x"), jsonrpc2.CodeInternalError, "Internal error")
	_, rerr := call(t, h, MethodWriteTextFile, map[string]any{"sessionId": "s1", "path": filepath.Join(e.dir, "a")})
	wantErr(t, rerr, jsonrpc2.CodeInvalidParams, "content are required")
	_, rerr = call(t, h, MethodWriteTextFile, map[string]any{"sessionId": "s1", "path": filepath.Join(e.dir, "a"), "content": strings.Repeat("x", MaxFileSize+1)})
	wantErr(t, rerr, jsonrpc2.CodeInvalidParams, "over the 16 MiB")
	_, rerr = call(t, h, MethodWriteTextFile, map[string]any{"sessionId": "s1", "path": "/etc/passwd", "content": "x"})
	wantErr(t, rerr, CodeResourceNotFound, "outside")
	_, rerr = call(t, h, MethodWriteTextFile, map[string]any{"sessionId": "s2", "path": filepath.Join(e.dir, "a"), "content": "x"})
	wantErr(t, rerr, CodeResourceNotFound, "unknown session")
	_, rerr = h.Serve(context.Background(), MethodWriteTextFile, []byte(`{"sessionId":"s1","path":"`+e.dir+`/a","content":1}`))
	wantErr(t, rerr, jsonrpc2.CodeInvalidParams, "Invalid params")
}

// A session's additional directories may be separate workspaces; a path
// is served by the deepest directory holding it.
func TestAdditionalDirectories(t *testing.T) {
	a, b := newEngine(t), newEngine(t)
	h := handler(Root{Dir: a.dir, Files: a.files}, Root{Dir: b.dir, Files: b.files})
	pa, pb := a.disk(t, "f", "in a\n"), b.disk(t, "f", "in b\n")
	for p, want := range map[string]string{pa: "in a\n", pb: "in b\n"} {
		if got, rerr := read(t, h, map[string]any{"sessionId": "s1", "path": p}); rerr != nil || got != want {
			t.Fatalf("%s: %q %v", p, got, rerr)
		}
	}
	if _, rerr := call(t, h, MethodWriteTextFile, map[string]any{"sessionId": "s1", "path": filepath.Join(b.dir, "new"), "content": "x"}); rerr != nil {
		t.Fatal(rerr)
	}
	if st, _ := b.draft.Status(); len(st) != 1 || st[0].Path != "new" {
		t.Fatalf("b's draft: %v", st)
	}
	if st, _ := a.draft.Status(); len(st) != 0 {
		t.Fatalf("a's draft: %v", st)
	}
}

func TestReadThrough(t *testing.T) {
	e := newEngine(t)
	p := e.disk(t, "a.txt", "disk\n")
	e.disk(t, "b.txt", "disk b\n")
	var asked []string
	editorErr := error(nil)
	h := handler(Root{Dir: e.dir, Files: e.files})
	h.ReadThrough = func(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
		var rp struct{ Path string }
		json.Unmarshal(params, &rp)
		asked = append(asked, filepath.Base(rp.Path))
		if editorErr != nil {
			return nil, editorErr
		}
		return json.RawMessage(`{"content":"editor's unsaved text\n"}`), nil
	}
	if got, rerr := read(t, h, map[string]any{"sessionId": "s1", "path": p}); rerr != nil || got != "editor's unsaved text\n" {
		t.Fatalf("read = %q %v", got, rerr)
	}
	editorErr = errors.New("no such buffer")
	if got, rerr := read(t, h, map[string]any{"sessionId": "s1", "path": p}); rerr != nil || got != "disk\n" {
		t.Fatalf("fallback = %q %v", got, rerr)
	}
	// Paths the draft changed, and paths the merged view lacks, are not asked.
	call(t, h, MethodWriteTextFile, map[string]any{"sessionId": "s1", "path": p, "content": "draft\n"})
	if err := e.files.Remove("b.txt"); err != nil {
		t.Fatal(err)
	}
	if got, rerr := read(t, h, map[string]any{"sessionId": "s1", "path": p}); rerr != nil || got != "draft\n" {
		t.Fatalf("draft read = %q %v", got, rerr)
	}
	_, rerr := read(t, h, map[string]any{"sessionId": "s1", "path": filepath.Join(e.dir, "b.txt")})
	wantErr(t, rerr, CodeResourceNotFound, "no such file")
	if strings.Join(asked, ",") != "a.txt,a.txt" {
		t.Fatalf("asked the editor for %v", asked)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.disk(t, "c.txt", "c\n")
	_, rerr = h.Serve(ctx, MethodReadTextFile, []byte(fmt.Sprintf(`{"sessionId":"s1","path":%q}`, filepath.Join(e.dir, "c.txt"))))
	wantErr(t, rerr, CodeRequestCancelled, "cancelled")
}

// FS works as a plain jsonrpc2 handler.
func TestJSONRPC2Handler(t *testing.T) {
	e := newEngine(t)
	p := e.disk(t, "a.txt", "one\ntwo\n")
	h := handler(Root{Dir: e.dir, Files: e.files})
	c1, c2 := net.Pipe()
	ctx := context.Background()
	server := jsonrpc2.NewConn(ctx, jsonrpc2.NewPlainObjectStream(c1), h)
	defer server.Close()
	client := jsonrpc2.NewConn(ctx, jsonrpc2.NewPlainObjectStream(c2), jsonrpc2.HandlerWithError(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) {
		return nil, nil
	}))
	defer client.Close()

	var res struct{ Content string }
	if err := client.Call(ctx, MethodReadTextFile, map[string]any{"sessionId": "s1", "path": p, "line": 2}, &res); err != nil || res.Content != "two\n" {
		t.Fatalf("read: %q %v", res.Content, err)
	}
	var wres map[string]any
	if err := client.Call(ctx, MethodWriteTextFile, map[string]any{"sessionId": "s1", "path": p, "content": ""}, &wres); err != nil || len(wres) != 0 {
		t.Fatalf("write: %v %v", wres, err)
	}
	err := client.Call(ctx, MethodReadTextFile, map[string]any{"sessionId": "s1", "path": "/nope"}, &res)
	var rerr *jsonrpc2.Error
	if !errors.As(err, &rerr) || rerr.Code != CodeResourceNotFound {
		t.Fatalf("outside: %v", err)
	}
	err = client.Call(ctx, "session/prompt", map[string]any{}, &res)
	if !errors.As(err, &rerr) || rerr.Code != jsonrpc2.CodeMethodNotFound {
		t.Fatalf("other method: %v", err)
	}
	if err := client.Notify(ctx, MethodWriteTextFile, map[string]any{"sessionId": "s1", "path": p, "content": "ignored"}); err != nil {
		t.Fatal(err)
	}
}

// The one mapper from errors to JSON-RPC codes.
func TestRPCError(t *testing.T) {
	for _, tt := range []struct {
		err  error
		code int64
		msg  string
	}{
		{&fs.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT}, CodeResourceNotFound, "no such file"},
		{fmt.Errorf("resolve: %w", overlay.ErrOutside), CodeResourceNotFound, "outside"},
		{&notFoundError{path: "/p", reason: "why"}, CodeResourceNotFound, "/p: why"},
		{&sessionError{id: "x"}, CodeResourceNotFound, `unknown session "x"`},
		{&paramsError{"bad"}, jsonrpc2.CodeInvalidParams, "Invalid params: bad"},
		{&beyondEndError{line: 9, lastRow: 2, lastCol: 3}, jsonrpc2.CodeInvalidParams, "line 9 asked, the file ends at line 2:3"},
		{&textError{key: "k", msg: "is binary"}, jsonrpc2.CodeInternalError, "/k is binary"},
		{fmt.Errorf("x: %w", agent.ErrTooLarge), jsonrpc2.CodeInternalError, "larger than 16 MiB"},
		{fmt.Errorf("x: %w", context.Canceled), CodeRequestCancelled, "Request cancelled"},
		{&fs.PathError{Op: "open", Path: "/d", Err: syscall.EISDIR}, jsonrpc2.CodeInternalError, "is a directory"},
		{&fs.PathError{Op: "open", Path: "/d", Err: syscall.ENOTDIR}, jsonrpc2.CodeInternalError, "not a directory"},
		{&fs.PathError{Op: "write", Path: "/d", Err: syscall.ENOSPC}, jsonrpc2.CodeInternalError, "no space left"},
	} {
		got := rpcError(tt.err, "/path")
		if got.Code != tt.code || !strings.Contains(got.Message, tt.msg) {
			t.Errorf("%v: %d %q, want %d %q", tt.err, got.Code, got.Message, tt.code, tt.msg)
		}
	}
}

// A session may name its workspace through a symlink; the view knows it
// by its real path.
func TestSymlinkedRoot(t *testing.T) {
	e := newEngine(t)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(e.dir, link); err != nil {
		t.Fatal(err)
	}
	e.disk(t, "a.txt", "real\n")
	h := handler(Root{Dir: filepath.Join(link, "sub"), Files: e.files, Workspace: link}, Root{Dir: link, Files: e.files, Workspace: link})
	if got, rerr := read(t, h, map[string]any{"sessionId": "s1", "path": filepath.Join(link, "a.txt")}); rerr != nil || got != "real\n" {
		t.Fatalf("read through the link: %q %v", got, rerr)
	}
	if _, rerr := call(t, h, MethodWriteTextFile, map[string]any{"sessionId": "s1", "path": filepath.Join(link, "sub/b.txt"), "content": "x"}); rerr != nil {
		t.Fatal(rerr)
	}
	if st, _ := e.draft.Status(); len(st) != 1 || st[0].Path != "sub/b.txt" {
		t.Fatalf("status %v", st)
	}
	_, rerr := read(t, h, map[string]any{"sessionId": "s1", "path": filepath.Join(e.dir, "a.txt")})
	wantErr(t, rerr, CodeResourceNotFound, "outside the session's directories")
}
