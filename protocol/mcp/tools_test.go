package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/draftfs/draftfs/overlay/agent"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestReadTextFileReportsWholeFile(t *testing.T) {
	e := newEnv(t)
	long := fixtureFiles["long.txt"]
	for _, c := range []struct {
		args      map[string]any
		truncated bool
	}{
		{m("path", "long.txt"), false},
		{m("path", "long.txt", "head", 3), true},
		{m("path", "long.txt", "tail", 3), true},
		{m("path", "long.txt", "head", 100000), false},
		{m("path", "long.txt", "tail", 100000), false},
		{m("path", "a.txt", "tail", 3), false},
	} {
		r := e.call("read_text_file", c.args)
		if r.isError {
			t.Fatalf("%v: %s", c.args, r.text)
		}
		want := long
		if c.args["path"] == "a.txt" {
			want = fixtureFiles["a.txt"]
		}
		if r.structured["sha256"] != sha(want) || r.structured["size"] != float64(len(want)) || r.structured["truncated"] != c.truncated {
			t.Errorf("%v: structured %v, want sha256 %s size %d truncated %v", c.args, r.structured, sha(want), len(want), c.truncated)
		}
		if mt, err := time.Parse(time.RFC3339Nano, fmt.Sprint(r.structured["mtime"])); err != nil || !mt.Equal(fixtureTime) {
			t.Errorf("%v: mtime %v, want %v", c.args, r.structured["mtime"], fixtureTime)
		}
	}
	info := e.call("get_file_info", m("path", "long.txt"))
	if info.structured["sha256"] != sha(long) || !strings.Contains(info.text, "sha256: "+sha(long)) {
		t.Errorf("get_file_info: %q %v", info.text, info.structured)
	}
	if dir := e.call("get_file_info", m("path", "sub")); strings.Contains(dir.text, "sha256") || dir.structured["sha256"] != nil {
		t.Errorf("a directory has no sha256: %q", dir.text)
	}
}

func TestReadLimits(t *testing.T) {
	e := newEnv(t, withOptions(func(o *Options) { o.MaxFileSize = 1000 }))
	for _, tool := range []string{"read_text_file", "read_media_file", "edit_file", "append_file"} {
		args := m("path", "long.txt")
		switch tool {
		case "edit_file":
			args["edits"] = []any{}
		case "append_file":
			args["content"] = "x"
		}
		e.fails(tool, args, "File too large: "+e.abs("long.txt")+" is ")
	}
	r := e.ok("read_multiple_files", m("paths", []string{"long.txt", "a.txt"}))
	if !strings.Contains(r, "long.txt: Error - File too large") || !strings.Contains(r, "a.txt:\nhello") {
		t.Errorf("read_multiple_files: %q", r)
	}
	if info := e.ok("get_file_info", m("path", "long.txt")); strings.Contains(info, "sha256") {
		t.Errorf("get_file_info of a file over the limit shows a sha256: %q", info)
	}
	if r := e.ok("search_content", m("path", ".", "pattern", "line 1")); !strings.Contains(r, "No matches found (skipped 3 binary files and 1 file over 1000 B)") {
		t.Errorf("search_content: %q", r)
	}
}

func TestBinaryAsText(t *testing.T) {
	e := newEnv(t)
	e.fails("read_text_file", m("path", "data.bin"), "is a binary file")
	e.fails("edit_file", m("path", "data.bin", "edits", []any{m("oldText", "binary", "newText", "x")}), "is a binary file")
	r := e.ok("read_multiple_files", m("paths", []string{"data.bin"}))
	if !strings.HasPrefix(r, "data.bin: Error - Cannot read") {
		t.Errorf("read_multiple_files: %q", r)
	}
	// read_media_file reads anything.
	if r := e.call("read_media_file", m("path", "data.bin")); r.isError {
		t.Errorf("read_media_file: %q", r.text)
	}
}

// TestBuffersAndDraft: reads show the editor's unsaved text; writes land
// in the draft and never on disk; edits start from what the reader saw.
func TestBuffersAndDraft(t *testing.T) {
	e := newEnv(t)
	if err := e.ws.Buffers().Open("a.txt", 1, []byte("hello\nfrom the editor\n")); err != nil {
		t.Fatal(err)
	}
	if got := e.ok("read_text_file", m("path", "a.txt")); got != "hello\nfrom the editor\n" {
		t.Errorf("read: %q", got)
	}
	diff := e.ok("edit_file", m("path", "a.txt", "edits", []any{m("oldText", "from the editor", "newText", "from the agent")}))
	if !strings.Contains(diff, "-from the editor\n+from the agent") {
		t.Errorf("edit diff: %q", diff)
	}
	e.ok("write_file", m("path", "new.txt", "content", "new\n"))
	e.ok("create_directory", m("path", "made/here"))
	e.ok("move_file", m("source", "nonl.txt", "destination", "made/nonl.txt"))
	if got := e.view("a.txt"); got != "hello\nfrom the agent\n" {
		t.Errorf("view: %q", got)
	}
	original := t.TempDir()
	makeTree(t, original)
	compareSnapshots(t, "disk", diskSnapshot(t, e.root), diskSnapshot(t, original))
	status := e.ok("draft_status", nil)
	want := []string{
		"M " + e.abs("a.txt"),
		"A " + e.abs("made/here") + "/",
		"R " + e.abs("nonl.txt") + " -> " + e.abs("made/nonl.txt"),
		"A " + e.abs("new.txt"),
	}
	if status != strings.Join(want, "\n") {
		t.Errorf("draft_status:\n%s\nwant\n%s", status, strings.Join(want, "\n"))
	}
	if got := e.ok("draft_status", m("paths", []string{"new.txt"})); got != "A "+e.abs("new.txt") {
		t.Errorf("draft_status new.txt: %q", got)
	}
	d := e.ok("draft_diff", m("paths", []string{"a.txt"}))
	if !strings.Contains(d, "--- a/a.txt") || !strings.Contains(d, "-from the editor\n+from the agent") {
		t.Errorf("draft_diff: %q", d)
	}
	e.fails("draft_status", m("paths", []string{"/etc"}), "Access denied - path outside allowed directories")
	// The user saves other text meanwhile: the draft flags a conflict.
	if err := e.ws.Buffers().Open("a.txt", 2, []byte("the user's newer text\n")); err != nil {
		t.Fatal(err)
	}
	if got := e.ok("draft_status", m("paths", []string{"a.txt"})); got != "C "+e.abs("a.txt") {
		t.Errorf("draft_status after the user's change: %q", got)
	}
}

func TestEmptyDraft(t *testing.T) {
	e := newEnv(t)
	if got := e.ok("draft_status", nil); got != noChanges {
		t.Errorf("draft_status: %q", got)
	}
	if got := e.ok("draft_diff", nil); got != noChanges {
		t.Errorf("draft_diff: %q", got)
	}
}

func TestDeleteAndRestore(t *testing.T) {
	e := newEnv(t)
	e.ok("delete_file", m("path", "a.txt"))
	e.fails("read_text_file", m("path", "a.txt"), "ENOENT: no such file or directory, open '"+e.abs("a.txt")+"'")
	if e.disk("a.txt") != fixtureFiles["a.txt"] {
		t.Errorf("a.txt left the disk")
	}
	if got := e.ok("draft_status", nil); got != "D "+e.abs("a.txt") {
		t.Errorf("draft_status: %q", got)
	}
	e.ok("restore_file", m("path", "a.txt"))
	if got := e.ok("read_text_file", m("path", "a.txt")); got != fixtureFiles["a.txt"] {
		t.Errorf("after restore: %q", got)
	}
	e.fails("restore_file", m("path", "a.txt"), "Nothing to restore")

	e.fails("delete_file", m("path", "sub"), "ENOTEMPTY: directory not empty, rmdir '"+e.abs("sub")+"' (use recursive: true")
	e.ok("delete_file", m("path", "sub", "recursive", true))
	e.fails("list_directory", m("path", "sub"), "ENOENT")
	e.ok("restore_file", m("path", "sub"))
	if got := e.ok("read_text_file", m("path", "sub/deep/x.go")); got != fixtureFiles["sub/deep/x.go"] {
		t.Errorf("after restoring sub: %q", got)
	}
	e.ok("delete_file", m("path", "emptydir"))

	// A symlink goes, its target stays.
	e.ok("delete_file", m("path", "alink"))
	if got := e.ok("read_text_file", m("path", "a.txt")); got != fixtureFiles["a.txt"] {
		t.Errorf("a.txt after deleting alink: %q", got)
	}
	e.fails("read_text_file", m("path", "alink"), "ENOENT")

	e.fails("delete_file", m("path", "missing"), "ENOENT: no such file or directory, unlink '"+e.abs("missing")+"'")
	e.fails("delete_file", m("path", "."), "it is an allowed directory")
	e.fails("delete_file", m("path", "/etc/passwd"), "Access denied - path outside allowed directories")
	e.fails("delete_file", m("path", "links/outdir/etc/passwd"), "Access denied - symlink target outside allowed directories")

	// A move restores as a whole: the new path goes, the old comes back.
	e.ok("move_file", m("source", "code.go", "destination", "sub/code.go"))
	e.ok("restore_file", m("path", "sub/code.go"))
	if got := e.ok("read_text_file", m("path", "code.go")); got != fixtureFiles["code.go"] {
		t.Errorf("code.go after restoring its move: %q", got)
	}
	e.fails("read_text_file", m("path", "sub/code.go"), "ENOENT")

	original := t.TempDir()
	makeTree(t, original)
	compareSnapshots(t, "disk", diskSnapshot(t, e.root), diskSnapshot(t, original))
}

func TestCopyFile(t *testing.T) {
	e := newEnv(t)
	e.ok("copy_file", m("source", "script.sh", "destination", "copy.sh"))
	info, err := e.f.Stat("copy.sh")
	if err != nil || info.Mode.Perm() != 0o755 || e.view("copy.sh") != "#!/bin/sh\necho hi\n" {
		t.Errorf("copy.sh: %v %v %q", info, err, e.view("copy.sh"))
	}
	e.ok("copy_file", m("source", "sub/deep", "destination", "deep2"))
	if e.view("deep2/x.go") != fixtureFiles["sub/deep/x.go"] || e.view("deep2/notes.md") != fixtureFiles["sub/deep/notes.md"] {
		t.Errorf("deep2: %q %q", e.view("deep2/x.go"), e.view("deep2/notes.md"))
	}
	e.ok("copy_file", m("source", "alink", "destination", "fromlink.txt"))
	if e.view("fromlink.txt") != fixtureFiles["a.txt"] {
		t.Errorf("fromlink.txt: %q", e.view("fromlink.txt"))
	}
	e.fails("copy_file", m("source", "a.txt", "destination", "B.txt"), "Destination already exists: "+e.abs("B.txt"))
	e.fails("copy_file", m("source", "sub", "destination", "sub/inner"), "into itself")
	e.fails("copy_file", m("source", "a.txt", "destination", "nodir/a.txt"), "ENOENT: no such file or directory, copyfile '"+e.abs("a.txt")+"' -> '"+e.abs("nodir/a.txt")+"'")
	e.fails("copy_file", m("source", "missing", "destination", "x"), "ENOENT: no such file or directory, copyfile")
	e.fails("copy_file", m("source", ".", "destination", "sub/all"), "into itself")
	e.fails("copy_file", m("source", "links", "destination", "links2"), "Cannot copy the symlink")
	if e.disk("copy.sh") != "<open "+e.abs("copy.sh")+": no such file or directory>" {
		t.Errorf("copy.sh reached the disk")
	}
}

func TestAppendFile(t *testing.T) {
	e := newEnv(t)
	e.ok("append_file", m("path", "a.txt", "content", "more\n"))
	if got := e.view("a.txt"); got != "hello\nworld\nmore\n" {
		t.Errorf("a.txt: %q", got)
	}
	e.ok("append_file", m("path", "sub/fresh.txt", "content", "first\n"))
	if got := e.view("sub/fresh.txt"); got != "first\n" {
		t.Errorf("fresh.txt: %q", got)
	}
	e.fails("append_file", m("path", "nodir/x", "content", "x"), "ENOENT: no such file or directory, open '"+e.abs("nodir/x")+"'")
	e.fails("append_file", m("path", "sub", "content", "x"), "EISDIR")
	if e.disk("a.txt") != fixtureFiles["a.txt"] {
		t.Errorf("a.txt changed on disk")
	}
}

func TestWriteKeepsMode(t *testing.T) {
	e := newEnv(t)
	e.ok("write_file", m("path", "script.sh", "content", "#!/bin/sh\n"))
	e.ok("edit_file", m("path", "script.sh", "edits", []any{m("oldText", "sh", "newText", "bash")}))
	info, err := e.f.Stat("script.sh")
	if err != nil || info.Mode.Perm() != 0o755 || e.view("script.sh") != "#!/bin/bash\n" {
		t.Errorf("script.sh: %v %v %q", info, err, e.view("script.sh"))
	}
	// An edit that changes nothing leaves no draft entry.
	e.ok("edit_file", m("path", "B.txt", "edits", []any{m("oldText", "upper", "newText", "upper")}))
	if got := e.ok("draft_status", m("paths", []string{"B.txt"})); got != noChanges {
		t.Errorf("B.txt after a no-op edit: %q", got)
	}
	// dryRun writes nothing.
	e.ok("edit_file", m("path", "B.txt", "edits", []any{m("oldText", "upper", "newText", "lower")}, "dryRun", true))
	if e.view("B.txt") != "upper\n" {
		t.Errorf("B.txt after a dry run: %q", e.view("B.txt"))
	}
}

// TestBadInput: every bad input is a tool error, and the server keeps
// answering.
func TestBadInput(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read_text_file", m("path", "a\x00b"), "Access denied - path outside allowed directories"},
		{"read_text_file", m("path", `C:\Windows\win.ini`), "Access denied - Windows-style path received on a POSIX host"},
		{"read_text_file", m("path", "~/x"), "Access denied - path outside allowed directories"},
		{"read_text_file", m("path", "links/evil"), "Access denied - symlink target outside allowed directories"},
		{"read_text_file", m("path", "sublink/../../x"), "Access denied - path outside allowed directories"},
		{"read_text_file", m("path", "a.txt", "head", 1e300), ""},
		{"read_text_file", m("path", []any{}), "Invalid input: expected string, received array at path"},
		{"read_multiple_files", m("paths", []any{1, "a.txt"}), "Invalid input: expected string, received number at paths[0]"},
		{"read_multiple_files", m("paths", []any{}), "Too small: expected array to have >=1 items at paths"},
		{"edit_file", m("path", "a.txt", "edits", []any{"x", m("oldText", 1)}), "Invalid input: expected object, received string at edits[0]\nInvalid input: expected string, received number at edits[1].oldText\nInvalid input: expected string, received undefined at edits[1].newText"},
		{"edit_file", m("path", "a.txt", "edits", []any{m("oldText", "zzz", "newText", "x"), m("oldText", "hello", "newText", "x")}), "Could not find exact match for edit:\nzzz"},
		{"list_directory_with_sizes", m("path", ".", "sortBy", "mtime"), `Invalid option: expected one of "name"|"size" at sortBy`},
		{"directory_tree", m("path", ".", "excludePatterns", []any{"{a,b"}), `invalid glob pattern "{a,b": unclosed "{"`},
		{"search_files", m("path", ".", "pattern", "@(a|b"), `invalid glob pattern "@(a|b": unclosed "("`},
		{"search_files", m("path", ".", "pattern", "*", "excludePatterns", []any{"[z-a]"}), "invalid glob pattern"},
		{"search_content", m("path", ".", "pattern", "(", "regex", true), "Invalid regular expression"},
		{"search_content", m("path", ".", "pattern", ""), "The pattern is empty"},
		{"search_content", m("path", "missing", "pattern", "x"), "ENOENT: no such file or directory, stat"},
		{"search_content", m("path", ".", "pattern", "x", "include", []any{"[x"}), "invalid glob pattern"},
		{"move_file", m("source", "a.txt"), "Invalid input: expected string, received undefined at destination"},
		{"move_file", m("source", "a.txt", "destination", "links/evil"), "Access denied - symlink target outside allowed directories"},
		{"write_file", m("path", "links/dangle", "content", "x"), "Parent directory does not exist: " + filepath.Join(e.root, "links")},
		{"create_directory", m("path", "links/outdir/newdir"), "Access denied - symlink target outside allowed directories"},
		{"get_file_info", m("path", "a.txt/b"), "ENOTDIR: not a directory, realpath"},
		{"list_allowed_directories", m("extra", 1), ""},
	} {
		r := e.call(c.tool, c.args)
		if c.want == "" {
			if r.isError {
				t.Errorf("%s %v: %q", c.tool, c.args, r.text)
			}
			continue
		}
		if !r.isError || !strings.Contains(r.text, c.want) {
			t.Errorf("%s %v: error=%v %q, want an error containing %q", c.tool, c.args, r.isError, r.text, c.want)
		}
	}
	if got := e.ok("read_text_file", m("path", "a.txt")); got != fixtureFiles["a.txt"] {
		t.Errorf("after the bad input: %q", got)
	}
}

// panicky is a view whose reads panic.
type panicky struct{ agent.Files }

func (panicky) ReadFile(string, int64) ([]byte, error) { panic("boom") }

// TestPanicIsToolError: a tool that panics answers with an error and the
// server goes on.
func TestPanicIsToolError(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "tree")
	makeTree(t, root)
	ws, d, f := openView(t, root, filepath.Join(base, "state"))
	e := serveEnv(t, root, ws, d, panicky{f})
	e.fails("read_text_file", m("path", "a.txt"), "internal error in read_text_file: boom")
	if got := e.ok("list_directory", m("path", "sub")); !strings.Contains(got, "[FILE] y.ts") {
		t.Errorf("after the panic: %q", got)
	}
}

// TestPanicIsFatal: with Options.Fatal, a tool that panics answers with
// an error naming the bug, and Fatal is called once that answer is sent,
// once only; other tool errors are no bug.
func TestPanicIsFatal(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "tree")
	makeTree(t, root)
	ws, d, f := openView(t, root, filepath.Join(base, "state"))
	fatal := make(chan error, 2)
	e := serveEnv(t, root, ws, d, panicky{f}, withOptions(func(o *Options) {
		o.Fatal = func(err error) { fatal <- err }
	}))
	e.fails("list_directory", m("path", "missing"), "ENOENT")
	select {
	case err := <-fatal:
		t.Fatalf("Fatal after a tool error: %v", err)
	default:
	}
	text := e.fails("read_text_file", m("path", "a.txt"), "internal error in read_text_file: boom")
	id := regexp.MustCompile(`bug [0-9a-f]{8}`).FindString(text)
	if id == "" || !strings.Contains(text, "draftfs mcp stops") {
		t.Errorf("the answer does not name the bug or say the server stops: %q", text)
	}
	select {
	case err := <-fatal:
		if err.Error() != "internal error in read_text_file: boom" {
			t.Errorf("Fatal(%v)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Fatal was not called after the answer")
	}
	e.fails("read_text_file", m("path", "a.txt"), "internal error in read_text_file: boom")
	select {
	case err := <-fatal:
		t.Errorf("Fatal called again: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestUnknownTool(t *testing.T) {
	e := newEnv(t)
	e.fails("commit", nil, "MCP error -32602: Tool commit not found")
	tools, err := e.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if strings.Contains(tl.Name, "commit") {
			t.Errorf("a tool commits: %s", tl.Name)
		}
		if tl.Annotations == nil || tl.Annotations.OpenWorldHint == nil || *tl.Annotations.OpenWorldHint {
			t.Errorf("%s: openWorldHint must be false", tl.Name)
		}
	}
}

func TestDirectoryTreeJSON(t *testing.T) {
	e := newEnv(t)
	got := e.ok("directory_tree", m("path", "sub"))
	want := `[
  {
    "name": ".hidden",
    "type": "file"
  },
  {
    "name": "deep",
    "type": "directory",
    "children": [
      {
        "name": "notes.md",
        "type": "file"
      },
      {
        "name": "x.go",
        "type": "file"
      }
    ]
  },
  {
    "name": "y.ts",
    "type": "file"
  }
]`
	if got != want {
		t.Errorf("directory_tree:\n%s\nwant\n%s", got, want)
	}
	if got := e.ok("directory_tree", m("path", "emptydir")); got != "[]" {
		t.Errorf("empty: %q", got)
	}
}
