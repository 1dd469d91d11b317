package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/draftfs/draftfs/protocol/control"
)

// fakeAgent is an ACP agent that, for each new session, writes
// notes.txt in the session's directory through the client.
const fakeAgent = `import json, sys
sessions = ["s03dc3c8b", "s1f2e3d4c"]
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": 1, "agentCapabilities": {}}})
    elif m.get("method") == "session/new":
        sid = sessions.pop(0)
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"sessionId": sid}})
        send({"jsonrpc": "2.0", "id": "w-" + sid, "method": "fs/write_text_file",
              "params": {"sessionId": sid, "path": m["params"]["cwd"] + "/notes.txt", "content": sid + "\n"}})
`

// TestDraftsPerSession: draftfs drafts lists the drafts that draftfs acp
// --draft-per-session makes, with their changes and the process using
// them, and status says when another draft changes the same paths.
func TestDraftsPerSession(t *testing.T) {
	needFUSE(t)
	need(t, "python3")
	f := newFixture(t)
	f.file("main.go", "package main\n")
	agent := filepath.Join(f.tmp, "agent.py")
	os.WriteFile(agent, []byte(fakeAgent), 0o644)

	acp := f.cmd("acp", "--draft-per-session", "--", "python3", agent)
	stdin, _ := acp.StdinPipe()
	stdout, _ := acp.StdoutPipe()
	var stderr strings.Builder
	acp.Stderr = &stderr
	if err := acp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // the editor goes: acp ends
		waitExit(t, acp, "draftfs acp after its editor closed stdin")
	})
	replies := bufio.NewScanner(stdout)
	call := func(id int, method, params string) {
		fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
		for replies.Scan() {
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal(replies.Bytes(), &m)
			if string(m.ID) == fmt.Sprint(id) {
				return
			}
		}
		t.Fatalf("draftfs acp ended before answering %s; stderr: %s", method, stderr.String())
	}
	call(1, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	call(2, "session/new", fmt.Sprintf(`{"cwd":%q,"mcpServers":[]}`, f.ws))
	call(3, "session/new", fmt.Sprintf(`{"cwd":%q,"mcpServers":[]}`, f.ws))

	var list []control.DraftInfo
	for deadline := time.Now().Add(30 * time.Second); ; {
		list = nil
		json.Unmarshal([]byte(f.ok("drafts", "--json").out), &list)
		n := 0
		for _, d := range list {
			if strings.HasPrefix(d.Name, "s") && d.Changes == 1 {
				n++
			}
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("drafts: %+v; want the two sessions' drafts with a change each; acp stderr: %s", list, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, d := range list {
		if d.Name != "s03dc3c8b" && d.Name != "s1f2e3d4c" {
			continue
		}
		used := false
		for _, u := range d.Users {
			used = used || (u.Pid == acp.Process.Pid && strings.Contains(u.Command, "acp"))
		}
		if !used {
			t.Errorf("draft %s: users %+v; want draftfs acp (pid %d)", d.Name, d.Users, acp.Process.Pid)
		}
	}
	r := f.ok("drafts")
	if !strings.HasPrefix(r.out, "DRAFT") || !strings.Contains(r.out, "s03dc3c8b") || !strings.Contains(r.out, fmt.Sprintf("pid %d", acp.Process.Pid)) {
		t.Errorf("draftfs drafts: %s", r)
	}
	r = f.ok("--draft", "s03dc3c8b", "status")
	if r.out != "A notes.txt\n" || !strings.Contains(r.err, "draft s1f2e3d4c changes notes.txt too") {
		t.Errorf("status of one session's draft: %s; want notes.txt and a note that the other draft changes it too", r)
	}
}
