package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/draftfs/draftfs/overlay/agent"
)

// stdioEnv is a server on the stdio transport, spoken to line by line.
type stdioEnv struct {
	t    *testing.T
	root string
	f    agent.Files
	srv  *Server
	in   *io.PipeWriter
	out  *bufio.Reader
}

func newStdioEnv(t *testing.T, max int) *stdioEnv {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "tree")
	makeTree(t, root)
	_, _, f := openView(t, root, filepath.Join(base, "state"))
	srv, err := New(f, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- srv.Run(ctx, &stdioTransport{r: inR, w: outW, max: max, large: srv.large})
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the server did not stop")
		}
	})
	e := &stdioEnv{t: t, root: root, f: f, srv: srv, in: inW, out: bufio.NewReader(outR)}
	e.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	e.answer()
	e.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return e
}

func (e *stdioEnv) send(line string) {
	e.t.Helper()
	if _, err := io.WriteString(e.in, line+"\n"); err != nil {
		e.t.Fatal(err)
	}
}

// answer reads the next message from the server.
func (e *stdioEnv) answer() map[string]any {
	e.t.Helper()
	line, err := e.out.ReadString('\n')
	if err != nil {
		e.t.Fatalf("reading the answer: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		e.t.Fatalf("answer %q: %v", line, err)
	}
	return m
}

// callTool sends tools/call with id and the arguments' JSON.
func (e *stdioEnv) callTool(id int, name string, args map[string]any) map[string]any {
	e.t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.send(string(b))
	return e.answer()
}

func resultText(m map[string]any) string {
	b, _ := json.Marshal(m["result"])
	return string(b)
}

// The large string arguments that travel beside the message reach the
// tool exactly, escapes and all, and nothing of them stays behind.
func TestStdioLargeArguments(t *testing.T) {
	e := newStdioEnv(t, 8<<20)
	// Every kind of escape encoding/json writes, and text that needs none.
	text := strings.Repeat("line \"quoted\" \\ tab\t <tag> & é 😀 \u2028 \x01\n", 4000)
	plain := strings.Repeat("abcdefgh", 20000)
	for i, c := range []struct{ name, text string }{{"escaped.txt", text}, {"plain.txt", plain}} {
		r := e.callTool(i+1, "write_file", map[string]any{"path": filepath.Join(e.root, c.name), "content": c.text})
		if !strings.Contains(resultText(r), "Successfully wrote") {
			t.Fatalf("write_file %s: %s", c.name, resultText(r))
		}
		got, err := e.f.ReadFile(c.name, -1)
		if err != nil || string(got) != c.text {
			t.Errorf("%s: %d bytes, want %d (%v)", c.name, len(got), len(c.text), err)
		}
	}
	r := e.callTool(3, "append_file", map[string]any{"path": filepath.Join(e.root, "plain.txt"), "content": text})
	if !strings.Contains(resultText(r), "Successfully appended") {
		t.Fatalf("append_file: %s", resultText(r))
	}
	if got, _ := e.f.ReadFile("plain.txt", -1); string(got) != plain+text {
		t.Errorf("append_file: %d bytes, want %d", len(got), len(plain)+len(text))
	}
	// A large argument the tool reads as a string, and one it never reads.
	r = e.callTool(4, "write_file", map[string]any{"path": strings.Repeat("p", 70<<10), "content": "x"})
	if !strings.Contains(resultText(r), `"isError":true`) || !strings.Contains(resultText(r), "ppp") {
		t.Errorf("write_file with a 70 KiB path: %s", resultText(r))
	}
	r = e.callTool(5, "list_directory", map[string]any{"path": e.root, "unused": plain})
	if strings.Contains(resultText(r), "draftfs-large-argument") {
		t.Errorf("list_directory answered with a stand-in: %s", resultText(r))
	}
	// A string that looks like a stand-in is taken as it is.
	fake := e.srv.large.prefix + "0"
	e.callTool(6, "write_file", map[string]any{"path": filepath.Join(e.root, "fake.txt"), "content": fake})
	if got, _ := e.f.ReadFile("fake.txt", -1); string(got) != fake {
		t.Errorf("fake stand-in: got %q", got)
	}
	e.srv.large.mu.Lock()
	defer e.srv.large.mu.Unlock()
	if len(e.srv.large.texts) != 0 || len(e.srv.large.byID) != 0 {
		t.Errorf("after every answer, %d texts and %d requests still held", len(e.srv.large.texts), len(e.srv.large.byID))
	}
}

// A line the server cannot take is answered, and the session goes on.
func TestStdioBadLines(t *testing.T) {
	e := newStdioEnv(t, 1<<20)
	cases := []struct {
		line string
		id   any
		code float64
		msg  string
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write_file","arguments":{"content":"` + strings.Repeat("x", 2<<20) + `"}}}`,
			7.0, -32600, "over the limit of 1 MiB"},
		{`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"write_file","arguments":{"content":"` + strings.Repeat("x", 2<<20) + `"}}}`,
			"s", -32600, "over the limit"},
		{`{"jsonrpc":"2.0","id":8,"method":`, 8.0, -32700, "Parse error"},
		{`not json`, nil, -32700, "Parse error"},
		{`[{"jsonrpc":"2.0","id":9,"method":"tools/list"}]`, nil, -32700, "batches are not supported"},
		{`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"write_file","arguments":{"content":"` + strings.Repeat("x", 100<<10) + `\x"}}}`,
			10.0, -32700, "Parse error"},
	}
	for _, c := range cases {
		e.send("")
		e.send(c.line)
		m := e.answer()
		errObj, _ := m["error"].(map[string]any)
		msg, _ := errObj["message"].(string)
		if m["id"] != c.id || errObj["code"] != c.code || !strings.Contains(msg, c.msg) {
			t.Errorf("%.60s...: answered %v", c.line, m)
		}
		r := e.callTool(100, "list_allowed_directories", map[string]any{})
		if !strings.Contains(resultText(r), "Allowed directories") {
			t.Fatalf("after %.60s...: %v", c.line, r)
		}
	}
}

// Only a tools/call request's top-level arguments travel beside the
// message, wherever its members stand.
func TestLargeStrings(t *testing.T) {
	big := `"` + strings.Repeat("x", largeArg) + `"`
	cases := []struct {
		line string
		want int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"w","arguments":{"a":` + big + `,"b":` + big + `,"c":"small"}}}`, 2},
		{`{"params":{"arguments":{"a":` + big + `},"name":"w"},"id":"x","jsonrpc":"2.0","method":"tools/call"}`, 1},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"w","arguments":{"a":` + big + `}}}`, 0},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"arguments":{"a":` + big + `}}}`, 0},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"w","arguments":{"a":[` + big + `],"b":{"c":` + big + `}}}}`, 0},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[{"arguments":{"a":` + big + `}}]}`, 0},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"w","arguments":{"a":` + big[:100] + `"}}}`, 0},
	}
	for i, c := range cases {
		spans, _, err := largeStrings([]byte(c.line))
		if err != nil || len(spans) != c.want {
			t.Errorf("case %d: %d spans, want %d (%v)", i, len(spans), c.want, err)
		}
		for _, s := range spans {
			if c.line[s.start:s.end] != big {
				t.Errorf("case %d: span %d-%d is not the string", i, s.start, s.end)
			}
		}
	}
}
