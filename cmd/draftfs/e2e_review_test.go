package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/protocol/control"
)

// agent returns a view of the daemon's draft that writes as an MCP front
// end would.
func (f *fixture) agent() *control.Files {
	f.t.Helper()
	files, err := control.NewFiles(f.client(), "", overlay.SourceMCP)
	if err != nil {
		f.t.Fatal(err)
	}
	return files
}

// TestExitStatuses checks each exit status interface.md defines, with a
// daemon running and without one.
func TestExitStatuses(t *testing.T) {
	for _, withDaemon := range []bool{false, true} {
		t.Run(fmt.Sprintf("daemon=%v", withDaemon), func(t *testing.T) {
			f := newFixture(t)
			f.file("a.txt", "a\n")
			if withDaemon {
				f.serve("")
			}
			cases := []struct {
				args []string
				code int
				says string // in stderr
			}{
				{[]string{"status"}, 0, ""},
				{[]string{"status", "--json"}, 0, ""},
				{[]string{"diff", "--stat", "a.txt"}, 0, ""},
				{[]string{"log"}, 0, ""},
				{[]string{"socket"}, 0, ""},
				{[]string{"commit"}, 0, ""},
				{[]string{"completion", "bash"}, 0, ""},
				{[]string{"status", "/etc"}, 1, "outside the workspace"},
				{[]string{"diff", "../a.txt"}, 1, "outside the workspace"},
				{[]string{"undo"}, 1, "nothing to undo"},
				{[]string{"discard", "a.txt"}, 1, `no draft changes at "a.txt"`},
				{[]string{"commit", "a.txt"}, 1, `no draft changes at "a.txt"`},
				{[]string{"buffer", "close", "a.txt"}, 1, ""},
				{[]string{"unmount", f.tmp}, 1, "not a mount point"},
				{[]string{"--workspace", "/nonexistent", "status"}, 1, "--workspace"},
				{[]string{"--draft", "no/such", "status"}, 1, "draft name"},
				{[]string{}, 2, "no command given"},
				{[]string{"explode"}, 2, "unknown command"},
				{[]string{"status", "--nope"}, 2, "unknown flag"},
				{[]string{"diff", "--color=sometimes"}, 2, "--color"},
				{[]string{"discard"}, 2, "--all"},
				{[]string{"discard", "--all", "a.txt"}, 2, "not both"},
				{[]string{"mount"}, 2, "accepts 1 arg"},
				{[]string{"unmount"}, 2, "accepts 1 arg"},
				{[]string{"serve", "extra"}, 2, "unknown command"},
				{[]string{"run"}, 2, "requires at least 1 arg"},
				{[]string{"buffer"}, 2, "subcommand"},
				{[]string{"buffer", "open"}, 2, "accepts 1 arg"},
				{[]string{"log", "x"}, 2, "unknown command"},
				{[]string{"undo", "--force"}, 2, "unknown flag"},
			}
			for _, c := range cases {
				r := f.run(c.args...)
				if r.code != c.code || !strings.Contains(r.err, c.says) {
					t.Errorf("draftfs %s: %s; want status %d saying %q", strings.Join(c.args, " "), r, c.code, c.says)
				}
				if r.code != 0 && strings.Count(r.err, "\n") != 1 && len(c.args) > 0 {
					t.Errorf("draftfs %s: the error is not one line: %q", strings.Join(c.args, " "), r.err)
				}
			}
		})
	}
}

// TestConflictWorkflow: a conflicting commit is refused with each path
// named and what to do; dry runs and --json say the same; --force and
// undo work; a change on disk after a commit blocks its undo.
func TestConflictWorkflow(t *testing.T) {
	f := newFixture(t)
	f.file("c.txt", "base\n")
	f.file("m.txt", "1\n2\n3\n4\n5\n")
	f.serve("")
	agent := f.agent()
	if err := agent.WriteFile("c.txt", []byte("agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := agent.WriteFile("m.txt", []byte("ONE\n2\n3\n4\n5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	f.file("c.txt", "user\n")
	f.file("m.txt", "1\n2\n3\n4\nFIVE\n")

	if r := f.ok("status"); r.out != "C c.txt\nC m.txt\n" {
		t.Fatalf("status: %s", r)
	}
	r := f.run("commit")
	if r.code != 1 || !strings.Contains(r.err, "  C c.txt") || strings.Contains(r.err, "C m.txt") ||
		!strings.Contains(r.err, "draftfs discard PATH") || !strings.Contains(r.err, "--force") ||
		!strings.Contains(r.err, "through the mount") {
		t.Fatalf("commit with a conflict: %s", r)
	}
	if f.disk("c.txt") != "user\n" || f.disk("m.txt") != "1\n2\n3\n4\nFIVE\n" {
		t.Fatal("a refused commit wrote the disk")
	}
	if r := f.run("commit", "--dry-run"); r.code != 1 || !strings.Contains(r.out, "would commit 2 changes") || !strings.Contains(r.err, "would be refused") {
		t.Fatalf("dry run: %s", r)
	}
	r = f.run("commit", "--json")
	var res overlay.CommitResult
	if r.code != 1 || json.Unmarshal([]byte(r.out), &res) != nil || len(res.Conflicts) != 1 || res.Conflicts[0].Path != "c.txt" {
		t.Fatalf("commit --json: %s", r)
	}
	// The mergeable file alone commits, merged.
	if r := f.ok("commit", "m.txt"); !strings.Contains(r.out, "M m.txt (merged with your changes)") {
		t.Fatalf("commit of the mergeable file: %s", r)
	}
	if got := f.disk("m.txt"); got != "ONE\n2\n3\n4\nFIVE\n" {
		t.Fatalf("merged: %q", got)
	}
	if r := f.ok("commit", "--force"); !strings.Contains(r.out, "committed 1 change") {
		t.Fatalf("commit --force: %s", r)
	}
	if f.disk("c.txt") != "agent\n" {
		t.Fatalf("forced: %q", f.disk("c.txt"))
	}
	f.ok("undo")
	if f.disk("c.txt") != "user\n" {
		t.Fatalf("after undo: %q", f.disk("c.txt"))
	}
	if r := f.ok("status"); r.out != "C c.txt\n" {
		t.Fatalf("status after undo: %s", r)
	}
	f.ok("commit", "--force")
	f.file("c.txt", "edited after the commit\n")
	if r := f.run("undo"); r.code != 1 || !strings.Contains(r.err, "changed on disk") {
		t.Fatalf("undo after a disk change: %s", r)
	}
	if r := f.ok("log", "--json"); !strings.Contains(r.out, `"op": "commit"`) || !strings.Contains(r.out, `"source": "mcp"`) {
		t.Fatalf("log --json: %s", r)
	}
	if r := f.ok("discard", "--all"); r.out != "" {
		t.Fatalf("discard --all of an empty draft: %s", r)
	}
}

// TestDiffOutput: headers, colours only when asked (not a terminal),
// --stat, and binary files.
func TestDiffOutput(t *testing.T) {
	f := newFixture(t)
	f.file("t.txt", "one\ntwo\n")
	f.file("bin", "\x00\x01\x02")
	f.serve("")
	agent := f.agent()
	f.file("sub/old.txt", "o\n")
	for k, v := range map[string]string{"t.txt": "one\nTWO\n", "bin": "\x00\x01\x03", "sub/new.txt": "n\n"} {
		if err := agent.WriteFile(k, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := f.ok("diff")
	for _, want := range []string{
		"diff --git a/t.txt b/t.txt\n--- a/t.txt\n+++ b/t.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n",
		"Binary files a/bin and b/bin differ\n",
		"new file mode 100644\n--- /dev/null\n+++ b/sub/new.txt\n",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("diff lacks %q:\n%s", want, r.out)
		}
	}
	if strings.Contains(r.out, "\x1b[") {
		t.Error("colour when stdout is not a terminal")
	}
	if r := f.ok("diff", "--color=always", "t.txt"); !strings.Contains(r.out, "\x1b[32m+TWO\x1b[m") || !strings.Contains(r.out, "\x1b[31m-two\x1b[m") {
		t.Errorf("--color=always: %q", r.out)
	}
	r = f.ok("diff", "--stat")
	for _, want := range []string{" bin         | Bin\n", " sub/new.txt | 1 +\n", " t.txt       | 2 +-\n", " 3 files changed, 2 insertions(+), 1 deletion(-)\n"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("--stat lacks %q:\n%s", want, r.out)
		}
	}
	if r := f.ok("diff", filepath.Join(f.ws, "sub")); !strings.Contains(r.out, "sub/new.txt") || strings.Contains(r.out, "t.txt") {
		t.Errorf("diff of a directory: %s", r.out)
	}
}

// TestDiffNewDirectory: a file created in a directory the draft created
// diffs as a new file.
func TestDiffNewDirectory(t *testing.T) {
	f := newFixture(t)
	f.serve("")
	if err := f.agent().WriteFile("newdir/new.txt", []byte("n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "diff --git a/newdir/new.txt b/newdir/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/newdir/new.txt\n@@ -0,0 +1 @@\n+n\n"
	if r := f.ok("diff"); r.out != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", r.out, want)
	}
}

// TestHelp: every command has help with examples.
func TestHelp(t *testing.T) {
	f := newFixture(t)
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		cmds := append(c.Commands(), c)
		for _, sub := range cmds {
			if sub.Name() == "help" {
				continue
			}
			path := strings.Fields(sub.CommandPath())[1:]
			r := f.run(append(path, "--help")...)
			if r.code != 0 || !strings.Contains(r.out, "Usage:") {
				t.Errorf("draftfs %s --help: %s", strings.Join(path, " "), r)
			}
			if sub.Name() != "completion" && sub.Parent().Name() != "completion" && !strings.Contains(r.out, "Examples:") {
				t.Errorf("draftfs %s --help has no examples", strings.Join(path, " "))
			}
		}
	}
}

// TestCompletion: the shells' scripts, and completion of changed paths.
func TestCompletion(t *testing.T) {
	f := newFixture(t)
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if r := f.ok("completion", sh); len(r.out) < 100 {
			t.Errorf("completion %s: %s", sh, r)
		}
	}
	f.serve("")
	if err := f.agent().WriteFile("changed.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := f.ok("__complete", "diff", ""); !strings.Contains(r.out, "changed.txt\n") {
		t.Errorf("completing diff: %s", r)
	}
	if r := f.ok("__complete", "diff", "--color", ""); !strings.Contains(r.out, "always\n") {
		t.Errorf("completing --color: %s", r)
	}
}

// TestBuffers: a script stands in for an editor; the merged view shows
// the buffer, save and close hand back to the disk.
func TestBuffers(t *testing.T) {
	f := newFixture(t)
	f.file("b.txt", "disk\n")
	if r := f.runIn("x", "buffer", "open", "b.txt"); r.code != 1 || !strings.Contains(r.err, "draftfs serve") {
		t.Fatalf("buffer open without a daemon: %s", r)
	}
	f.serve("")
	if r := f.runIn("editor\n", "buffer", "open", "b.txt"); r.code != 0 {
		t.Fatalf("buffer open: %s", r)
	}
	if r := f.runIn("editor 2\n", "buffer", "open", filepath.Join(f.ws, "b.txt")); r.code != 0 {
		t.Fatalf("buffer open again: %s", r)
	}
	if r := f.runIn("\xff\xfe", "buffer", "open", "b.txt"); r.code != 1 || !strings.Contains(r.err, "UTF-8") {
		t.Fatalf("buffer open of bytes: %s", r)
	}
	if r := f.ok("buffer", "list"); r.out != "b.txt  version 2  dirty  9 bytes\n" {
		t.Fatalf("buffer list: %s", r)
	}
	if r := f.ok("buffer", "list", "--json"); !strings.Contains(r.out, `"version": 2`) {
		t.Fatalf("buffer list --json: %s", r)
	}
	read, err := f.client().Read("", "b.txt")
	if err != nil || string(read) != "editor 2\n" {
		t.Fatalf("the merged view shows %q, %v", read, err)
	}
	// The agent edits what the user sees; the diff is against the buffer.
	if err := f.agent().WriteFile("b.txt", []byte("editor 2\nagent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := f.ok("diff"); !strings.Contains(r.out, " editor 2\n+agent\n") {
		t.Fatalf("diff against the buffer: %s", r)
	}
	f.ok("buffer", "save", "b.txt")
	if r := f.ok("buffer", "list"); !strings.Contains(r.out, "saved") {
		t.Fatalf("after save: %s", r)
	}
	f.ok("buffer", "close", "b.txt")
	if r := f.ok("buffer", "list"); r.out != "" {
		t.Fatalf("after close: %s", r)
	}
	if r := f.run("buffer", "save", "b.txt"); r.code != 1 || !strings.Contains(r.err, "no buffer is open for b.txt") {
		t.Fatalf("save of a closed buffer: %s", r)
	}
}

// TestDraftFlag: --draft works on a separate draft, through the daemon
// and without it.
func TestDraftFlag(t *testing.T) {
	f := newFixture(t)
	f.serve("")
	c := f.client()
	files, err := control.NewFiles(c, "other", overlay.SourceACP)
	if err != nil {
		t.Fatal(err)
	}
	if err := files.WriteFile("o.txt", []byte("o"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := f.ok("status"); r.out != "" {
		t.Fatalf("main draft: %s", r)
	}
	if r := f.ok("--draft", "other", "status"); r.out != "A o.txt\n" {
		t.Fatalf("other draft: %s", r)
	}
	if r := f.ok("--draft", "other", "log"); !strings.Contains(r.out, "acp") {
		t.Fatalf("other draft's log: %s", r)
	}
}

// TestSubdirectory: without --workspace, a command run in a directory
// of a workspace that has state works on that workspace, and relative
// paths are taken from the current directory.
func TestSubdirectory(t *testing.T) {
	f := newFixture(t)
	f.file("sub/deep/x.txt", "x\n")
	f.serve("")
	if err := f.agent().WriteFile("sub/deep/x.txt", []byte("y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The workspace found above the current directory is named on
	// stderr.
	c := exec.Command(bin, "--state", f.state, "status", "x.txt")
	c.Dir = filepath.Join(f.ws, "sub", "deep")
	var stderr strings.Builder
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil || string(out) != "M sub/deep/x.txt\n" || !strings.Contains(stderr.String(), f.ws) {
		t.Fatalf("status in a subdirectory: %q %v, stderr %q", out, err, stderr.String())
	}
	c = exec.Command(bin, "--state", f.state, "socket")
	c.Dir = filepath.Join(f.ws, "sub")
	out, err = c.Output()
	if err != nil || strings.TrimSpace(string(out)) != f.socket() {
		t.Fatalf("socket in a subdirectory: %q %v", out, err)
	}
}
