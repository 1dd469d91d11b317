package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/draftfs/draftfs/protocol/acp/acptest"
)

// viewSnapshot describes the merged view, seen from inside draftfs run:
// every path with its type and mode, and every file's content hash.
func (f *fixture) viewSnapshot() string {
	f.t.Helper()
	return f.ok("run", "--", "sh", "-c",
		`find . -printf '%p %y %m\n' | LC_ALL=C sort; find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum`).out
}

// mcpCalls runs draftfs mcp as the MCP client named client and calls
// each tool, each call one step of the draft's timeline.
func (f *fixture) mcpCalls(client string, calls ...map[string]any) {
	f.t.Helper()
	c := f.cmd("mcp")
	stdin, _ := c.StdinPipe()
	stdout, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		f.t.Fatal(err)
	}
	defer c.Wait()
	defer stdin.Close()
	out := bufio.NewScanner(stdout)
	out.Buffer(nil, 1<<20)
	send := func(v map[string]any) {
		b, _ := json.Marshal(v)
		stdin.Write(append(b, '\n'))
	}
	wait := func(id int) {
		for out.Scan() {
			var m struct {
				ID     *int            `json:"id"`
				Error  json.RawMessage `json:"error"`
				Result struct {
					IsError bool `json:"isError"`
				} `json:"result"`
			}
			if json.Unmarshal(out.Bytes(), &m) == nil && m.ID != nil && *m.ID == id {
				if m.Error != nil || m.Result.IsError {
					f.t.Fatalf("mcp call %d: %s", id, out.Text())
				}
				return
			}
		}
		f.t.Fatalf("mcp: no answer to %d", id)
	}
	send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": client, "version": "1"}}})
	wait(1)
	send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	for i, call := range calls {
		send(map[string]any{"jsonrpc": "2.0", "id": i + 2, "method": "tools/call", "params": call})
		wait(i + 2)
	}
}

// timelineStep is a checkpoint as draftfs log --json prints it.
type timelineStep struct {
	ID     uint64
	Author struct{ Source, Name, Session string }
	Label  string
	Files  []string
	Ops    []struct{ Op, Path, Source, By string }
}

// annotations maps each path of draftfs diff --annotate --json to its
// hunks' annotations ("CHECKPOINT SOURCE NAME", joined by "; ").
func (f *fixture) annotations() map[string]string {
	f.t.Helper()
	var diffs []struct {
		Path  string
		Hunks []struct {
			Annotation *struct {
				Checkpoint uint64
				Author     struct{ Source, Name string }
			}
		}
	}
	if err := json.Unmarshal([]byte(f.ok("diff", "--annotate", "--json").out), &diffs); err != nil {
		f.t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range diffs {
		var hs []string
		for _, h := range d.Hunks {
			if a := h.Annotation; a != nil {
				hs = append(hs, fmt.Sprintf("%d %s %s", a.Checkpoint, a.Author.Source, a.Author.Name))
			} else {
				hs = append(hs, "none")
			}
		}
		out[d.Path] = strings.Join(hs, "; ")
	}
	return out
}

func (f *fixture) timeline() []timelineStep {
	f.t.Helper()
	var steps []timelineStep
	if err := json.Unmarshal([]byte(f.ok("log", "--json").out), &steps); err != nil {
		f.t.Fatal(err)
	}
	return steps
}

// TestTimelineRewind makes checkpoints with draftfs run, an ACP agent's
// prompt turn and MCP tool calls (creates, edits, deletes, a directory
// rename, a chmod): each shows in draftfs log as its author, and
// draftfs rewind K makes the merged view byte for byte what it was
// right after K; rewinding the rewind brings the later state back.
func TestTimelineRewind(t *testing.T) {
	needFUSE(t)
	needBwrap(t)
	acptest.Peers(t)
	f := newFixture(t)
	f.file("a.txt", "a0\n")
	f.file("gone.txt", "g\n")
	f.file("dir/old.txt", "o\n")
	f.serve("")
	f.ok("run", "--", "sh", "-c", "echo a1 >> a.txt; echo n > dir/new.txt; rm gone.txt")
	afterRun := f.viewSnapshot()
	if _, refused := f.acpTurn(f.ws,
		map[string]any{"op": "writeFile", "path": filepath.Join(f.ws, "a.txt"), "content": "a2\n"},
		map[string]any{"op": "sh", "script": "mv dir dir2; chmod 700 a.txt; echo s > sh.txt"},
	); refused != "" {
		t.Fatalf("acp: %s", refused)
	}
	afterACP := f.viewSnapshot()
	f.mcpCalls("test-mcp-client",
		map[string]any{"name": "write_file", "arguments": map[string]any{"path": filepath.Join(f.ws, "dir2/new.txt"), "content": "mcp\n"}},
		map[string]any{"name": "delete_file", "arguments": map[string]any{"path": filepath.Join(f.ws, "sh.txt")}},
	)
	afterMCP := f.viewSnapshot()
	if afterRun == afterACP || afterACP == afterMCP {
		t.Fatalf("the steps changed nothing:\n%s", afterMCP)
	}

	steps := f.timeline()
	var authors []string
	for _, s := range steps {
		authors = append(authors, fmt.Sprintf("%d %s %s", s.ID, s.Author.Source, s.Author.Name))
	}
	got := strings.Join(authors, "; ")
	want := "4 mcp test-mcp-client; 3 mcp test-mcp-client; 2 acp draftfs-test-agent; 1 mount sh"
	if got != want {
		t.Fatalf("log --json authors: %s, want %s\n%s", got, want, f.ok("log").out)
	}
	if steps[2].Author.Session == "" || !strings.Contains(strings.Join(steps[2].Files, " "), "dir2") {
		t.Errorf("the ACP step: %+v", steps[2])
	}
	if r := f.ok("log"); !strings.Contains(r.out, "checkpoint 1 ") || !strings.Contains(r.out, "mount   delete    gone.txt") {
		t.Errorf("log:\n%s", r.out)
	}

	// Each change names the step that last wrote it, and who.
	runCmd := "sh -c echo a1 >> a.txt; echo n > dir/new.txt; rm gone.txt"
	wantBy := map[string]string{
		"a.txt":        "2 acp draftfs-test-agent",
		"dir2/new.txt": "3 mcp test-mcp-client",
		"gone.txt":     "1 mount " + runCmd,
	}
	annotated := f.annotations()
	for p, w := range wantBy {
		if annotated[p] != w {
			t.Errorf("diff --annotate --json: %s last written by %q, want %q", p, annotated[p], w)
		}
	}
	if r := f.ok("diff", "--annotate"); !strings.Contains(r.out, "# checkpoint 2, acp draftfs-test-agent (session ") || !strings.Contains(r.out, "# checkpoint 1, mount "+runCmd+"\ndiff --git a/gone.txt") {
		t.Errorf("diff --annotate:\n%s", r.out)
	}

	f.ok("rewind", "1")
	if s := f.viewSnapshot(); s != afterRun {
		t.Fatalf("after rewind 1:\n%s\nwant\n%s", s, afterRun)
	}
	// The rewind's own step shows what it did: dir2 renamed back.
	if r := f.ok("log", "-p"); !strings.Contains(r.out, "rename from dir2\nrename to dir\n") {
		t.Errorf("log -p after rewind 1 does not show dir2 renamed back:\n%s", r.out)
	}
	f.ok("rewind", "2")
	if s := f.viewSnapshot(); s != afterACP {
		t.Fatalf("after rewind 2:\n%s\nwant\n%s", s, afterACP)
	}
	// Checkpoint 5 rewound to 1, 6 to 2: rewinding to 4 undoes both.
	f.ok("rewind", "4")
	if s := f.viewSnapshot(); s != afterMCP {
		t.Fatalf("after rewinding the rewinds:\n%s\nwant\n%s", s, afterMCP)
	}
	if r := f.ok("diff", "1..2"); !strings.Contains(r.out, "rename from dir") || !strings.Contains(r.out, "+a2") {
		t.Errorf("diff 1..2:\n%s", r.out)
	}
	// Inside draftfs run, rewinding is the user's.
	if r := f.run("run", "--", "draftfs", "rewind", "1"); r.code == 0 {
		t.Errorf("rewind from inside run: %s", r)
	}
}
