package acp

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Everything but what the proxy intercepts passes byte for byte, both
// ways; initialize only gains the fs capabilities.
func TestProxyForwardsUnchanged(t *testing.T) {
	r := startRig(t, rigOptions{})
	dir := t.TempDir()

	r.editor.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{ "protocolVersion" : 1 ,"clientCapabilities":{"fs":{"readTextFile":false,"_meta":{"x":1}},"terminal":false,"_meta":{"y":[1,2]}},"_meta":{"trace":"abc"}}}`)
	r.agent.expect(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{ "protocolVersion" : 1 ,"clientCapabilities":{"fs":{"readTextFile":true,"_meta":{"x":1},"writeTextFile":true},"terminal":false,"_meta":{"y":[1,2]}},"_meta":{"trace":"abc"}}}`)
	r.agent.send(`{"id":0,"jsonrpc":"2.0","result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true},"_meta":{"a":"\u00e9\n"}}}`)
	r.editor.expect(`{"id":0,"jsonrpc":"2.0","result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true},"_meta":{"a":"\u00e9\n"}}}`)

	lines := []struct{ from, line string }{
		{"editor", fmt.Sprintf(`{"jsonrpc":"2.0","id":"e-1","method":"session/new","params":{"cwd":%q,"mcpServers":[],"_meta":{"k":1.50}}}`, dir)},
		{"agent", `{"jsonrpc":"2.0","id":"e-1","result":{"sessionId":"s-1","modes":null}}`},
		{"editor", `{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s-1","prompt":[{"type":"text","text":"hi"}]}}`},
		{"agent", `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}},"_meta":{"m":true}}}`},
		{"agent", `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s-1","toolCall":{"toolCallId":"t"},"options":[]}}`},
		{"editor", `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}`},
		{"editor", `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":7}}`},
		{"editor", `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-1"}}`},
		{"agent", `{"jsonrpc":"2.0","id":7,"error":{"code":-32800,"message":"Request cancelled"}}`},
		{"agent", `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":0}}`},
		{"agent", `{"jsonrpc":"2.0","id":3,"method":"_vendor/ext","params":{"any":"thing"}}`},
		{"editor", `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found"}}`},
		{"agent", `{"jsonrpc":"2.0","id":4,"method":"terminal/create","params":{"sessionId":"s-1","command":"ls"}}`}, // the editor has no terminals
		{"editor", `[1,2,3]`},
		{"agent", `"just a string"`},
		{"editor", "\t{\"jsonrpc\":\"2.0\",\"method\":\"x\"}  "},
	}
	for _, l := range lines {
		if l.from == "editor" {
			r.editor.send(l.line)
			r.agent.expect(l.line)
		} else {
			r.agent.send(l.line)
			r.editor.expect(l.line)
		}
	}
	// CRLF and blank lines.
	r.editor.send("{\"jsonrpc\":\"2.0\",\"method\":\"crlf\"}\r\n\n   \r")
	r.agent.expect(`{"jsonrpc":"2.0","method":"crlf"}`)
}

// The agent's fs requests are answered by the proxy from the merged
// view; the editor never sees them.
func TestProxyServesFS(t *testing.T) {
	r := startRig(t, rigOptions{})
	dir := r.session("s1", `{"protocolVersion":1,"clientCapabilities":{}}`)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("disk\n"), 0o644)
	if err := r.ws.workspace(dir).Buffers().Open("a.txt", 3, []byte("unsaved\r\nbuffer")); err != nil {
		t.Fatal(err)
	}
	r.agent.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"fs/read_text_file","params":{"sessionId":"s1","path":%q,"_meta":{"z":0}}}`, filepath.Join(dir, "a.txt")))
	r.agent.expect(`{"jsonrpc":"2.0","id":5,"result":{"content":"unsaved\r\nbuffer"}}`)
	r.agent.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"w","method":"fs/write_text_file","params":{"sessionId":"s1","path":%q,"content":"new\n"}}`, filepath.Join(dir, "sub/new.txt")))
	r.agent.expect(`{"jsonrpc":"2.0","id":"w","result":{}}`)
	r.agent.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":6,"method":"fs/read_text_file","params":{"sessionId":"s1","path":%q}}`, "/etc/passwd"))
	r.agent.expect(`{"jsonrpc":"2.0","id":6,"error":{"code":-32002,"message":"Resource not found: /etc/passwd: outside the session's directories (its cwd and additionalDirectories)","data":{"uri":"/etc/passwd"}}}`)
	// A cancellation of a request the proxy has answered passes on, as
	// one for any finished request would (the editor ignores it).
	r.agent.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":6}}`)
	r.agent.send(`{"jsonrpc":"2.0","method":"marker"}`)
	r.editor.expect(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":6}}`)
	r.editor.expect(`{"jsonrpc":"2.0","method":"marker"}`)

	if got := r.ws.status(t, dir, ""); got != "A sub/new.txt\n" {
		t.Fatalf("status %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Fatalf("the write reached the disk: %v", err)
	}
}

// An agent may read files while it sets a session up, before the proxy
// has seen the session's id.
func TestProxyReadDuringSessionNew(t *testing.T) {
	r := startRig(t, rigOptions{})
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("rules\n"), 0o644)
	r.editor.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, dir))
	r.agent.recv()
	r.agent.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"sessionId":"early","path":%q}}`, filepath.Join(dir, "AGENTS.md")))
	r.agent.expect(`{"jsonrpc":"2.0","id":1,"result":{"content":"rules\n"}}`)
	r.agent.send(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"early"}}`)
	r.editor.expect(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"early"}}`)

	// session/load binds its session at once; a failed load unbinds it.
	r.editor.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"old","cwd":%q,"mcpServers":[]}}`, dir))
	r.agent.recv()
	r.agent.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"fs/read_text_file","params":{"sessionId":"old","path":%q}}`, filepath.Join(dir, "AGENTS.md")))
	r.agent.expect(`{"jsonrpc":"2.0","id":9,"result":{"content":"rules\n"}}`)
	r.agent.send(`{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"Resource not found"}}`)
	r.editor.recv()
	r.agent.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":10,"method":"fs/read_text_file","params":{"sessionId":"old","path":%q}}`, filepath.Join(dir, "AGENTS.md")))
	r.agent.expect(`{"jsonrpc":"2.0","id":10,"error":{"code":-32002,"message":"Resource not found: unknown session \"old\"","data":{"sessionId":"old"}}}`)
}

var proxyID = regexp.MustCompile(`"id":("draftfs-[0-9a-f]{8}-\d+")`)

// With an editor that reads files itself, reads of paths without a draft
// entry are asked of it first.
func TestProxyReadThrough(t *testing.T) {
	r := startRig(t, rigOptions{})
	dir := r.session("s1", `{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true}}}`)
	p := filepath.Join(dir, "a.txt")
	os.WriteFile(p, []byte("disk\n"), 0o644)

	params := fmt.Sprintf(`{"sessionId":"s1","path":%q,"line":1,"_meta":{"k":"v"}}`, p)
	r.agent.send(`{"jsonrpc":"2.0","id":5,"method":"fs/read_text_file","params":` + params + `}`)
	asked := r.editor.recv()
	m := proxyID.FindStringSubmatch(asked)
	if m == nil {
		t.Fatalf("editor received %s", asked)
	}
	if want := `{"jsonrpc":"2.0","id":` + m[1] + `,"method":"fs/read_text_file","params":` + params + `}`; asked != want {
		t.Fatalf("editor received\n%s\nwant\n%s", asked, want)
	}
	r.editor.send(`{"jsonrpc":"2.0","id":` + m[1] + `,"result":{"content":"editor buffer\n","_meta":{"from":"editor"}}}`)
	r.agent.expect(`{"jsonrpc":"2.0","id":5,"result":{"content":"editor buffer\n","_meta":{"from":"editor"}}}`)

	// The editor fails: the merged view answers.
	r.agent.send(`{"jsonrpc":"2.0","id":6,"method":"fs/read_text_file","params":` + params + `}`)
	m = proxyID.FindStringSubmatch(r.editor.recv())
	r.editor.send(`{"jsonrpc":"2.0","id":` + m[1] + `,"error":{"code":-32002,"message":"Resource not found"}}`)
	r.agent.expect(`{"jsonrpc":"2.0","id":6,"result":{"content":"disk\n"}}`)

	// The agent cancels while the editor thinks: the editor is told, with
	// the proxy's id, and the agent gets -32800.
	r.agent.send(`{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":` + params + `}`)
	m = proxyID.FindStringSubmatch(r.editor.recv())
	r.agent.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":7}}`)
	r.editor.expect(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":` + m[1] + `}}`)
	r.agent.expect(`{"jsonrpc":"2.0","id":7,"error":{"code":-32800,"message":"Request cancelled"}}`)
	// Its late answer is dropped, not forwarded to the agent.
	r.editor.send(`{"jsonrpc":"2.0","id":` + m[1] + `,"result":{"content":"late"}}`)
	r.editor.send(`{"jsonrpc":"2.0","method":"marker"}`)
	r.agent.expect(`{"jsonrpc":"2.0","method":"marker"}`)

	// A path the draft changed is not asked.
	r.agent.send(`{"jsonrpc":"2.0","id":8,"method":"fs/write_text_file","params":{"sessionId":"s1","path":"` + p + `","content":"agent\n"}}`)
	r.agent.expect(`{"jsonrpc":"2.0","id":8,"result":{}}`)
	r.agent.send(`{"jsonrpc":"2.0","id":9,"method":"fs/read_text_file","params":` + params + `}`)
	r.agent.expect(`{"jsonrpc":"2.0","id":9,"result":{"content":"agent\n"}}`)
}

func TestProxyTerminal(t *testing.T) {
	term := func(dir, draft string) (string, []string) {
		return "/usr/bin/draftfs", []string{"--workspace", dir, "--draft", draft, "run", "--"}
	}
	r := startRig(t, rigOptions{terminal: term, draftPerSession: true})
	dir := r.session("sess-9", `{"protocolVersion":1,"clientCapabilities":{"terminal":true}}`)
	r.agent.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"terminal/create","params":{"sessionId":"sess-9","command":"go","args":["test", "./..."],"env":[{"name":"A","value":"1"}],"cwd":%q,"outputByteLimit":1000,"_meta":{"q":1}}}`, filepath.Join(dir, "sub")))
	r.editor.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"terminal/create","params":{"sessionId":"sess-9","command":"/usr/bin/draftfs","args":["--workspace",%q,"--draft","sess-9","run","--","go","test","./..."],"env":[{"name":"A","value":"1"}],"cwd":%q,"outputByteLimit":1000,"_meta":{"q":1}}}`, dir, filepath.Join(dir, "sub")))
	// No args, no cwd.
	r.agent.send(`{"jsonrpc":"2.0","id":5,"method":"terminal/create","params":{"sessionId":"sess-9","command":"make"}}`)
	r.editor.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"terminal/create","params":{"sessionId":"sess-9","command":"/usr/bin/draftfs","args":["--workspace",%q,"--draft","sess-9","run","--","make"]}}`, dir))
	// What cannot be wrapped fails closed: the agent is told, the editor
	// never sees it (unwrapped, it would run on the real disk).
	r.agent.send(`{"jsonrpc":"2.0","id":6,"method":"terminal/create","params":{"sessionId":"other","command":"make"}}`)
	r.agent.expect(`{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"Invalid params: unknown sessionId \"other\": draftfs runs terminals only in the merged view of a session it knows"}}`)
	r.agent.send(`{"jsonrpc":"2.0","id":7,"method":"terminal/create","params":{"sessionId":"sess-9","command":["rm","-rf","/"]}}`)
	r.agent.expect(`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params: terminal/create's command must be a string"}}`)
	r.agent.send(`{"jsonrpc":"2.0","id":8,"method":"terminal/create","params":["sess-9","make"]}`)
	r.agent.expect(`{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"Invalid params: terminal/create needs an object with sessionId and command"}}`)
	// The editor got none of them: the next message it sees is this.
	r.agent.send(`{"jsonrpc":"2.0","method":"after"}`)
	r.editor.expect(`{"jsonrpc":"2.0","method":"after"}`)
}

func TestProxyDraftPerSession(t *testing.T) {
	r := startRig(t, rigOptions{draftPerSession: true})
	dir := r.session("A", `{"protocolVersion":1}`)
	r.editor.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, dir))
	r.agent.recv()
	r.agent.send(`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"b/\u00e9"}}`)
	r.editor.recv()
	for i, s := range []string{"A", `b/\u00e9`} {
		r.agent.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"fs/write_text_file","params":{"sessionId":"%s","path":"%s/f%d","content":"x"}}`, i, s, dir, i))
		r.agent.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, i))
	}
	if got := r.ws.status(t, dir, "A"); got != "A f0\n" {
		t.Fatalf("draft A: %q", got)
	}
	if got := r.ws.status(t, dir, SessionDraft("b/é")); got != "A f1\n" || !strings.HasPrefix(SessionDraft("b/é"), "acp-") {
		t.Fatalf("draft %s: %q", SessionDraft("b/é"), got)
	}
	if got := r.ws.status(t, dir, "main"); got != "" {
		t.Fatalf("main: %q", got)
	}
}

func TestProxyMalformedLines(t *testing.T) {
	r := startRig(t, rigOptions{})
	r.editor.send(`not json`)
	r.editor.expect(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON"}}`)
	r.agent.send(`{"jsonrpc":"2.0","id":1,`)
	r.agent.expect(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON"}}`)
	// The session goes on.
	r.editor.send(`{"jsonrpc":"2.0","id":1,"method":"x"}`)
	r.agent.expect(`{"jsonrpc":"2.0","id":1,"method":"x"}`)
	r.agent.send(`{"jsonrpc":"2.0","id":1,"result":null}`)
	r.editor.expect(`{"jsonrpc":"2.0","id":1,"result":null}`)
}

// Messages up to MaxMessage pass whole; a longer one is skipped and its
// sender told.
func TestProxyLargeMessages(t *testing.T) {
	r := startRig(t, rigOptions{})
	head, tail := `{"jsonrpc":"2.0","method":"big","params":{"text":"`, `"}}`
	full := head + strings.Repeat("x", MaxMessage-len(head)-len(tail)) + tail
	r.editor.send(full)
	if got := r.agent.recv(); got != full {
		t.Fatalf("agent received %d bytes, want %d", len(got), len(full))
	}
	r.agent.send(full)
	if got := r.editor.recv(); got != full {
		t.Fatalf("editor received %d bytes, want %d", len(got), len(full))
	}
	over := head + strings.Repeat("y", MaxMessage-len(head)-len(tail)+1) + tail
	r.editor.send(over)
	r.editor.expect(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: a message over 32 MiB was skipped"}}`)
	r.editor.send(`{"jsonrpc":"2.0","method":"after"}`)
	r.agent.expect(`{"jsonrpc":"2.0","method":"after"}`)
}

// When the agent dies, the editor's pending requests fail and Run
// returns the agent's status.
func TestProxyAgentExits(t *testing.T) {
	r := startRig(t, rigOptions{exitStatus: 3})
	r.editor.send(`{"jsonrpc":"2.0","id":"p1","method":"session/prompt","params":{}}`)
	r.editor.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{}}`)
	r.agent.recv()
	r.agent.recv()
	r.agent.send(`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"x"}}`)
	r.editor.recv()
	r.agent.w.Close() // the relay exits with status 3
	r.editor.expect(`{"jsonrpc":"2.0","id":"p1","error":{"code":-32603,"message":"Internal error: the agent exited (status 3) before answering"}}`)
	r.editor.closed()
	if s := r.wait(); s != 3 {
		t.Fatalf("status %d, want 3", s)
	}
}

// When the editor hangs up, the agent's input is closed; an agent that
// ignores it and SIGTERM is killed.
func TestProxyEditorHangsUp(t *testing.T) {
	r := startRig(t, rigOptions{})
	r.editor.w.Close()
	r.agent.closed()
	r.agent.w.Close()
	if s := r.wait(); s != 0 {
		t.Fatalf("status %d", s)
	}

	stuck := startRig(t, rigOptions{
		agent:       []string{"/bin/sh", "-c", `trap "" TERM; exec sleep 60`},
		stopTimeout: 200 * time.Millisecond,
	})
	start := time.Now()
	stuck.editor.w.Close()
	if s := stuck.wait(); s != 128+9 {
		t.Fatalf("status %d, want %d (SIGKILL)", s, 128+9)
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Fatalf("killed after %v, before SIGTERM's grace", d)
	}
}

func TestProxyAgentMissing(t *testing.T) {
	_, err := Run(t.Context(), Options{Agent: []string{"/nonexistent/agent"}, Open: newWorkspaces(t).open, Stdin: strings.NewReader(""), Stdout: os.Stdout})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/agent") {
		t.Fatalf("Run: %v", err)
	}
}

// The fs requests the proxy answers take effect in arrival order, even
// when a write is pipelined behind reads.
func TestProxyFSOrder(t *testing.T) {
	r := startRig(t, rigOptions{})
	dir := r.session("s", `{}`)
	p := filepath.Join(dir, "f")
	const n = 50
	for i := range n {
		content, _ := json.Marshal(fmt.Sprint(i))
		r.agent.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"fs/write_text_file","params":{"sessionId":"s","path":%q,"content":%s}}`, 2*i, p, content))
		r.agent.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"fs/read_text_file","params":{"sessionId":"s","path":%q}}`, 2*i+1, p))
	}
	for i := range n {
		r.agent.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, 2*i))
		r.agent.expect(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":"%d"}}`, 2*i+1, i))
	}
}

func TestInitializeRewrite(t *testing.T) {
	for _, tt := range []struct{ params, want string }{
		{`{"protocolVersion":1}`, `{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true}}}`},
		{`{"clientCapabilities":null}`, `{"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true}}}`},
		{`{"clientCapabilities":{"fs":null,"terminal":true}}`, `{"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}}`},
		{`{"clientCapabilities":{"fs":{"writeTextFile":false,"_meta":{"a":1}}}}`, `{"clientCapabilities":{"fs":{"writeTextFile":true,"_meta":{"a":1},"readTextFile":true}}}`},
	} {
		p := newProxy(&Options{}, io.Discard, io.Discard)
		line := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":` + tt.params + `}`
		m, _ := parseMessage([]byte(line))
		got := string(p.initialize([]byte(line), &m))
		if want := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":` + tt.want + `}`; got != want {
			t.Errorf("%s:\n got %s\nwant %s", tt.params, got, want)
		}
	}
	// Params that are not an object pass as they are.
	p := newProxy(&Options{}, io.Discard, io.Discard)
	line := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":[1]}`
	m, _ := parseMessage([]byte(line))
	if got := string(p.initialize([]byte(line), &m)); got != line {
		t.Errorf("array params: %s", got)
	}
}
