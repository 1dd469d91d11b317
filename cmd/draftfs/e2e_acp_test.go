package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/draftfs/draftfs/protocol/acp/acptest"
)

// acpTurn runs the SDK editor (editor.mjs) against `draftfs acp -- node
// agent.mjs` with one prompt of steps in a session at cwd, and returns
// the turn's results, or the error that refused the session.
func (f *fixture) acpTurn(cwd string, steps ...map[string]any) (results []json.RawMessage, refused string) {
	f.t.Helper()
	node, peers := acptest.Peers(f.t)
	tmp, err := os.MkdirTemp(f.tmp, "acp")
	if err != nil {
		f.t.Fatal(err)
	}
	f.own(tmp)
	prompts, _ := json.Marshal([]any{steps})
	pf, out := filepath.Join(tmp, "prompts.json"), filepath.Join(tmp, "out.json")
	if err := os.WriteFile(pf, prompts, 0o644); err != nil {
		f.t.Fatal(err)
	}
	f.own(pf)
	agent := f.cmd("acp", "--", node, filepath.Join(peers, "agent.mjs"))
	c := f.as(exec.Command(node, append([]string{filepath.Join(peers, "editor.mjs"), "--cwd", cwd, "--prompts", pf, "--out", out, "--"}, agent.Args...)...))
	if b, err := c.CombinedOutput(); err != nil {
		f.t.Fatalf("editor.mjs: %v\n%s", err, b)
	}
	var report struct {
		Turns []struct {
			Results     []json.RawMessage
			PromptError *struct{ Message string }
		}
		ConnectionError string
	}
	b, err := os.ReadFile(out)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := json.Unmarshal(b, &report); err != nil {
		f.t.Fatalf("editor report %s: %v", b, err)
	}
	if report.ConnectionError != "" {
		return nil, report.ConnectionError
	}
	if len(report.Turns) != 1 || report.Turns[0].PromptError != nil {
		f.t.Fatalf("editor report: %s", b)
	}
	return report.Turns[0].Results, ""
}

// TestACPAgentInsideDraft: an agent on the official ACP SDK that never
// calls fs/* (readFileSync, writeFileSync, a shell it spawns) runs inside
// the draft under draftfs acp: it reads the editor's unsaved buffer, the
// disk stays byte for byte as it was, and status lists each change.
func TestACPAgentInsideDraft(t *testing.T) {
	needBwrap(t)
	acptest.Peers(t)
	whoever(t, testACPAgentInsideDraft)
}

func testACPAgentInsideDraft(t *testing.T, f *fixture) {
	f.file("a.txt", "disk\n")
	f.file("pkg/sub/keep.txt", "keep\n")
	f.file("pkg/other.txt", "other\n")
	before := snapshotDir(t, f.ws)
	f.serve("")
	if r := f.runIn("unsaved\n", "buffer", "open", "a.txt"); r.code != 0 {
		t.Fatal(r)
	}
	results, refused := f.acpTurn(f.ws,
		map[string]any{"op": "cwd"},
		map[string]any{"op": "readFile", "path": filepath.Join(f.ws, "a.txt")},
		map[string]any{"op": "writeFile", "path": filepath.Join(f.ws, "new.txt"), "content": "by the agent\n"},
		map[string]any{"op": "writeFile", "path": filepath.Join(f.ws, "pkg/other.txt"), "content": "changed\n"},
		map[string]any{"op": "sh", "script": "echo x > f; rm pkg/sub/keep.txt; cat a.txt"},
		map[string]any{"op": "read", "path": filepath.Join(f.ws, "new.txt")},
		map[string]any{"op": "write", "path": filepath.Join(f.ws, "via-fs.txt"), "content": "fs\n"},
	)
	if refused != "" {
		t.Fatalf("session refused: %s", refused)
	}
	want := []string{
		`{"cwd":"` + f.ws + `"}`,
		`{"content":"unsaved\n"}`,
		`{}`, `{}`,
		`{"status":0,"stdout":"unsaved\n","stderr":""}`,
		`{"content":"by the agent\n"}`,
		`{}`,
	}
	if len(results) != len(want) {
		t.Fatalf("results: %s", results)
	}
	for i, w := range want {
		var got, exp any
		json.Unmarshal(results[i], &got)
		json.Unmarshal([]byte(strings.ReplaceAll(w, "\n", `\n`)), &exp)
		if g, e := mustJSON(got), mustJSON(exp); g != e {
			t.Errorf("step %d: %s, want %s", i, g, e)
		}
	}
	if after := snapshotDir(t, f.ws); after != before {
		t.Errorf("the disk changed:\nbefore %s\nafter  %s", before, after)
	}
	st := f.ok("status").out
	for _, w := range []string{"A f\n", "A new.txt\n", "M pkg/other.txt\n", "D pkg/sub/keep.txt\n", "A via-fs.txt\n"} {
		if !strings.Contains(st, w) {
			t.Errorf("status lacks %q:\n%s", w, st)
		}
	}

	// A session outside the workspace is refused: the agent's own I/O
	// there would reach the disk.
	_, refused = f.acpTurn(t.TempDir(), map[string]any{"op": "cwd"})
	if !strings.Contains(refused, "outside") {
		t.Errorf("a session outside the workspace: %q", refused)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// snapshotDir describes every file below dir: path, mode and content.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			b.WriteString(" " + string(data))
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}
