package acp

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/draftfs/draftfs/protocol/acp/acptest"
)

// Tests with real peers: the official TypeScript SDK
// (@agentclientprotocol/sdk) on both sides of the proxy, the scripted
// agent and editor of scripts/peers/acp.

// A scripted SDK agent behind the proxy, a scripted SDK editor in front.
func TestNodePeersThroughProxy(t *testing.T) {
	acptest.Peers(t)
	ws := newWorkspaces(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	os.WriteFile(filepath.Join(dir, "src/main.go"), []byte("package main\n// on disk\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("l1\nl2\nl3\nl4\n"), 0o644)
	big := bytes.Repeat([]byte("0123456789abcdef\n"), (12<<20)/17)
	os.WriteFile(filepath.Join(dir, "big.txt"), big, 0o644)
	unsaved := "package main\r\n\r\n// unsaved: é ✓ 𝄞 \"quoted\" \\ \t\x7f\r\nfunc main() {}"
	if err := ws.workspace(dir).Buffers().Open("src/main.go", 4, []byte(unsaved)); err != nil {
		t.Fatal(err)
	}
	prompts := []any{
		[]map[string]any{
			{"op": "caps"},
			{"op": "read", "path": filepath.Join(dir, "src/main.go")},
			{"op": "read", "path": filepath.Join(dir, "notes.txt"), "line": 2, "limit": 2},
			{"op": "read", "path": filepath.Join(dir, "notes.txt"), "line": 9},
			{"op": "read", "path": "/etc/passwd"},
			{"op": "write", "path": filepath.Join(dir, "new/dir/file.txt"), "content": "created\n"},
			{"op": "write", "path": filepath.Join(dir, "notes.txt"), "content": ""},
			{"op": "read", "path": filepath.Join(dir, "new/dir/file.txt")},
			{"op": "read", "path": filepath.Join(dir, "big.txt"), "lengthOnly": true},
			{"op": "update", "text": "progress", "_meta": map[string]any{"vendor": map[string]any{"n": 1.5}}},
			{"op": "terminal", "command": "go", "args": []string{"test", "./..."}, "cwd": dir},
		},
		"cancel",
		[]map[string]any{{"op": "caps"}},
	}
	term := func(d, draft string) (string, []string) {
		return "/opt/draftfs", []string{"--workspace", d, "--draft", draft, "run", "--"}
	}
	run := runNode(t, ws, dir, prompts, nodeOptions{editorFlags: []string{"--terminal"}, configure: func(o *Options) { o.Terminal = term }})
	rep := run.report
	if rep.ConnectionError != "" || len(rep.Turns) != 2 || run.status != 0 {
		t.Fatalf("report %+v, status %d", rep, run.status)
	}
	res := rep.Turns[0].Results

	caps := result[map[string]any](t, res[0])
	if !reflect.DeepEqual(caps["fs"], map[string]any{"readTextFile": true, "writeTextFile": true}) || caps["terminal"] != true {
		t.Errorf("the agent saw capabilities %v", caps)
	}
	if r := result[readResult](t, res[1]); r.Content == nil || *r.Content != unsaved {
		t.Errorf("unsaved buffer read as %+v", r)
	}
	if r := result[readResult](t, res[2]); r.Content == nil || *r.Content != "l2\nl3\n" {
		t.Errorf("line 2 limit 2: %+v", r)
	}
	if r := result[readResult](t, res[3]); r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "line 9") {
		t.Errorf("line 9: %+v", r)
	}
	if r := result[readResult](t, res[4]); r.Error == nil || r.Error.Code != -32002 || !reflect.DeepEqual(r.Error.Data, map[string]any{"uri": "/etc/passwd"}) {
		t.Errorf("outside: %+v", r)
	}
	for _, i := range []int{5, 6} {
		if string(res[i]) != "{}" {
			t.Errorf("write %d: %s", i, res[i])
		}
	}
	if r := result[readResult](t, res[7]); r.Content == nil || *r.Content != "created\n" {
		t.Errorf("read back: %+v", r)
	}
	if r := result[readResult](t, res[8]); r.Length != len(big) {
		t.Errorf("big file: %d bytes, want %d", r.Length, len(big))
	}
	if tr := result[map[string]any](t, res[10]); tr["terminalId"] != "term-1" {
		t.Errorf("terminal: %v", tr)
	}
	if got := rep.Turns[1].Cancelled; len(got) != 1 || got[0] != rep.SessionID {
		t.Errorf("session/cancel did not reach the agent: %v", got)
	}

	// Writes are in the draft, not on disk.
	if got := ws.status(t, dir, ""); got != "A new/dir/file.txt\nM notes.txt\n" {
		t.Errorf("draft status %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
		t.Errorf("new/ reached the disk")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "l1\nl2\nl3\nl4\n" {
		t.Errorf("notes.txt on disk: %q", b)
	}

	// The terminal command was wrapped, cwd kept.
	if len(rep.Seen.Terminal) != 1 {
		t.Fatalf("terminal requests: %v", rep.Seen.Terminal)
	}
	tp := rep.Seen.Terminal[0]
	wantArgs := []any{"--workspace", dir, "--draft", "", "run", "--", "go", "test", "./..."}
	if tp["command"] != "/opt/draftfs" || !reflect.DeepEqual(tp["args"], wantArgs) || tp["cwd"] != dir {
		t.Errorf("terminal/create reached the editor as %v", tp)
	}

	checkTraffic(t, run)
}

// checkTraffic compares the raw traffic on both sides of the proxy:
// everything the editor sent reached the agent byte for byte (initialize
// with fs added), and everything the agent sent reached the editor byte
// for byte, except the fs requests the proxy answered (and their
// cancellations) and terminal/create (its command wrapped).
func checkTraffic(t *testing.T, run *nodeRun) {
	t.Helper()
	editorOut, agentIn := run.lines(t, "editor-out.jsonl"), run.lines(t, "agent-in.jsonl")
	agentOut, editorIn := run.lines(t, "agent-out.jsonl"), run.lines(t, "editor-in.jsonl")

	served := map[string]bool{}
	var fromAgent []string
	for _, l := range agentOut {
		m := generic(t, l)
		switch m["method"] {
		case MethodReadTextFile, MethodWriteTextFile:
			served[fmt.Sprint(m["id"])] = true
			continue
		case MethodCancelRequest:
			if served[fmt.Sprint(m["params"].(map[string]any)["requestId"])] {
				continue
			}
		}
		fromAgent = append(fromAgent, l)
	}
	var toAgent []string
	for _, l := range agentIn {
		m := generic(t, l)
		if _, hasMethod := m["method"]; !hasMethod && served[fmt.Sprint(m["id"])] {
			continue // the proxy's answer
		}
		toAgent = append(toAgent, l)
	}
	// The proxy's own requests to the editor, their cancellations and
	// the editor's answers.
	proxys := func(l string) bool {
		m := generic(t, l)
		id, _ := m["id"].(string)
		if p, ok := m["params"].(map[string]any); ok && m["method"] == MethodCancelRequest {
			id, _ = p["requestId"].(string)
		}
		return strings.HasPrefix(id, "draftfs-")
	}
	var toEditor, fromEditor []string
	for _, l := range editorIn {
		if !proxys(l) {
			toEditor = append(toEditor, l)
		}
	}
	for _, l := range editorOut {
		if !proxys(l) {
			fromEditor = append(fromEditor, l)
		}
	}

	if len(fromEditor) != len(toAgent) {
		t.Fatalf("the editor sent %d messages, the agent received %d:\n%s\n---\n%s", len(fromEditor), len(toAgent), strings.Join(fromEditor, "\n"), strings.Join(toAgent, "\n"))
	}
	for i := range fromEditor {
		if fromEditor[i] == toAgent[i] {
			continue
		}
		sent, got := generic(t, fromEditor[i]), generic(t, toAgent[i])
		if sent["method"] != MethodInitialize {
			t.Errorf("the editor sent\n%s\nthe agent received\n%s", fromEditor[i], toAgent[i])
			continue
		}
		sent["params"].(map[string]any)["clientCapabilities"].(map[string]any)["fs"] = map[string]any{"readTextFile": true, "writeTextFile": true}
		if !reflect.DeepEqual(sent, got) {
			t.Errorf("initialize: the editor sent\n%s\nthe agent received\n%s", fromEditor[i], toAgent[i])
		}
	}
	if len(fromAgent) != len(toEditor) {
		t.Fatalf("the agent sent %d messages for the editor, the editor received %d:\n%s\n---\n%s", len(fromAgent), len(toEditor), strings.Join(fromAgent, "\n"), strings.Join(toEditor, "\n"))
	}
	for i := range fromAgent {
		if fromAgent[i] == toEditor[i] {
			continue
		}
		sent, got := generic(t, fromAgent[i]), generic(t, toEditor[i])
		if sent["method"] != MethodTerminalCreate {
			t.Errorf("the agent sent\n%s\nthe editor received\n%s", fromAgent[i], toEditor[i])
			continue
		}
		sp, gp := sent["params"].(map[string]any), got["params"].(map[string]any)
		for _, k := range []string{"command", "args"} {
			delete(sp, k)
			delete(gp, k)
		}
		if !reflect.DeepEqual(sent, got) {
			t.Errorf("terminal/create: the agent sent\n%s\nthe editor received\n%s", fromAgent[i], toEditor[i])
		}
	}
	for _, l := range editorIn {
		if m := generic(t, l); m["method"] == MethodReadTextFile && !strings.HasPrefix(fmt.Sprint(m["id"]), "draftfs-") || m["method"] == MethodWriteTextFile {
			t.Errorf("the editor received an fs request the proxy served: %s", l)
		}
	}
}

// With an editor that reads files itself, reads of files without a draft
// entry are asked of it, under the proxy's ids; a cancelled read is
// cancelled at the editor too.
func TestNodePeersReadThrough(t *testing.T) {
	acptest.Peers(t)
	ws := newWorkspaces(t)
	dir := t.TempDir()
	for _, f := range []string{"a.txt", "b.txt", "slow.txt"} {
		os.WriteFile(filepath.Join(dir, f), []byte("disk "+f+"\n"), 0o644)
	}
	prompts := []any{[]map[string]any{
		{"op": "read", "path": filepath.Join(dir, "a.txt")},
		{"op": "write", "path": filepath.Join(dir, "b.txt"), "content": "agent\n"},
		{"op": "read", "path": filepath.Join(dir, "b.txt")},
		{"op": "read", "path": filepath.Join(dir, "gone.txt")},
		{"op": "cancelRead", "path": filepath.Join(dir, "slow.txt"), "afterMs": 300},
	}}
	run := runNode(t, ws, dir, prompts, nodeOptions{editorFlags: []string{"--fs", "--slow", filepath.Join(dir, "slow.txt")}})
	rep := run.report
	if rep.ConnectionError != "" || len(rep.Turns) != 1 {
		t.Fatalf("report %+v", rep)
	}
	res := rep.Turns[0].Results
	if r := result[readResult](t, res[0]); r.Content == nil || *r.Content != "disk a.txt\n" {
		t.Errorf("a.txt: %+v", r)
	}
	if r := result[readResult](t, res[2]); r.Content == nil || *r.Content != "agent\n" {
		t.Errorf("b.txt: %+v", r)
	}
	if r := result[readResult](t, res[3]); r.Error == nil || r.Error.Code != CodeResourceNotFound {
		t.Errorf("gone.txt: %+v", r)
	}
	if r := result[readResult](t, res[4]); r.Error == nil || r.Error.Code != CodeRequestCancelled {
		t.Errorf("cancelled read: %+v", r)
	}
	var asked []string
	for _, f := range rep.Seen.FS {
		asked = append(asked, f.Method+" "+filepath.Base(fmt.Sprint(f.Params["path"])))
	}
	if got := strings.Join(asked, ", "); got != "fs/read_text_file a.txt, fs/read_text_file slow.txt" {
		t.Errorf("the editor was asked: %s", got)
	}
	if rep.Seen.FSCancelled != 1 {
		t.Errorf("the editor saw %d cancellations, want 1", rep.Seen.FSCancelled)
	}
	if got := ws.status(t, dir, ""); got != "M b.txt\n" {
		t.Errorf("draft status %q", got)
	}
	checkTraffic(t, run)
}

// When the agent dies in the middle of a prompt, the editor's prompt
// fails with an error and the proxy returns the agent's status.
func TestNodePeersAgentDies(t *testing.T) {
	acptest.Peers(t)
	ws := newWorkspaces(t)
	dir := t.TempDir()
	run := runNode(t, ws, dir, []any{[]map[string]any{{"op": "exit", "code": 7}}}, nodeOptions{})
	if run.status != 7 {
		t.Errorf("status %d, want 7", run.status)
	}
	turns := run.report.Turns
	if len(turns) != 1 || turns[0].PromptError == nil || turns[0].PromptError.Code == nil || *turns[0].PromptError.Code != -32603 ||
		!strings.Contains(turns[0].PromptError.Message, "the agent exited (status 7)") {
		t.Fatalf("report %+v", run.report)
	}
}
