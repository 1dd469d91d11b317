package mcp

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/protocol/mcp/internal/peers"
)

// The differential test: one sequence of tool calls, made by the MCP
// TypeScript SDK's client, against the reference server
// (@modelcontextprotocol/server-filesystem) and against this package
// served on stdio, each over its own copy of one tree. Answers must be
// equal once each tree's root is written ROOT, except where draftfs
// differs on purpose; each such step asserts its difference.

// answer is one step's answer, as the client returned it.
type answer struct {
	Content           []map[string]any `json:"content"`
	StructuredContent any              `json:"structuredContent"`
	IsError           bool             `json:"isError"`
	Error             string           `json:"error"`
	Tools             []map[string]any `json:"tools"`
	URIs              []string         `json:"uris"`
	Contents          []map[string]any `json:"contents"`
}

// text is the answer's first text block.
func (a answer) text() string {
	if len(a.Content) == 0 {
		return ""
	}
	s, _ := a.Content[0]["text"].(string)
	return s
}

// check compares the reference's answer with draftfs's.
type check func(t *testing.T, ref, got answer)

// step is one request of the sequence.
type step struct {
	Op    string         `json:"op"`
	Name  string         `json:"name,omitempty"`
	Args  map[string]any `json:"args,omitempty"`
	Roots []string       `json:"roots,omitempty"`
	MS    int            `json:"ms,omitempty"`
	URI   string         `json:"uri,omitempty"`
	check check
}

func call(name string, args map[string]any, c check) step {
	if c == nil {
		c = same
	}
	return step{Op: "call", Name: name, Args: args, check: c}
}

// same: the same text, error flag and structured text.
func same(t *testing.T, ref, got answer) {
	t.Helper()
	if got.IsError != ref.IsError || got.text() != ref.text() || got.Error != ref.Error {
		t.Errorf("answers differ\nreference: error=%v %q %s\ndraftfs:   error=%v %q %s", ref.IsError, ref.text(), ref.Error, got.IsError, got.text(), got.Error)
		return
	}
	if len(got.Content) != len(ref.Content) {
		t.Errorf("%d content blocks, the reference %d", len(got.Content), len(ref.Content))
	}
	if !ref.IsError {
		r, _ := ref.StructuredContent.(map[string]any)
		g, _ := got.StructuredContent.(map[string]any)
		if !reflect.DeepEqual(r["content"], g["content"]) {
			t.Errorf("structured content %v, the reference %v", g["content"], r["content"])
		}
	}
}

// sameLines: the same lines in any order (draftfs lists by name, the
// reference in the order the disk returns).
func sameLines(t *testing.T, ref, got answer) {
	t.Helper()
	sorted := func(a answer) answer {
		lines := strings.Split(a.text(), "\n")
		sort.Strings(lines)
		a.Content = []map[string]any{{"type": "text", "text": strings.Join(lines, "\n")}}
		a.StructuredContent = nil
		return a
	}
	same(t, sorted(ref), sorted(got))
}

// sameTree: the same directory_tree JSON, children in any order.
func sameTree(t *testing.T, ref, got answer) {
	t.Helper()
	if ref.IsError || got.IsError {
		same(t, ref, got)
		return
	}
	var r, g any
	if err := json.Unmarshal([]byte(ref.text()), &r); err != nil {
		t.Fatalf("reference tree: %v", err)
	}
	if err := json.Unmarshal([]byte(got.text()), &g); err != nil {
		t.Fatalf("draftfs tree: %v", err)
	}
	sortTree(r)
	sortTree(g)
	if !reflect.DeepEqual(r, g) {
		t.Errorf("trees differ\nreference: %v\ndraftfs:   %v", r, g)
	}
	// Formatting too: JSON.stringify(tree, null, 2).
	if rb, _ := json.MarshalIndent(g, "", "  "); len(rb) != len(got.text()) {
		t.Errorf("tree text is not 2-space indented JSON: %q", got.text())
	}
}

func sortTree(v any) {
	list, ok := v.([]any)
	if !ok {
		return
	}
	sort.Slice(list, func(i, j int) bool {
		return list[i].(map[string]any)["name"].(string) < list[j].(map[string]any)["name"].(string)
	})
	for _, e := range list {
		sortTree(e.(map[string]any)["children"])
	}
}

// sameWhole: every block and the whole structured content equal.
func sameWhole(t *testing.T, ref, got answer) {
	t.Helper()
	if !reflect.DeepEqual(ref.Content, got.Content) || !reflect.DeepEqual(ref.StructuredContent, got.StructuredContent) || ref.IsError != got.IsError {
		t.Errorf("answers differ\nreference: %+v\ndraftfs:   %+v", ref, got)
	}
}

// samePrefix: both errors, starting alike (the rest names things that
// differ by nature: a temporary file's random name, a symlink's target).
func samePrefix(prefix string) check {
	return func(t *testing.T, ref, got answer) {
		t.Helper()
		if !ref.IsError || !got.IsError || !strings.HasPrefix(ref.text(), prefix) || !strings.HasPrefix(got.text(), prefix) {
			t.Errorf("want errors starting %q\nreference: error=%v %q\ndraftfs:   error=%v %q", prefix, ref.IsError, ref.text(), got.IsError, got.text())
		}
	}
}

var (
	timeLine    = regexp.MustCompile(`(?m)^(created|accessed): .*$`)
	anyTimeLine = regexp.MustCompile(`(?m)^(created|accessed|modified): .*$`)
)

// sameInfo: get_file_info alike, but for the creation and access times
// (the copies were made at different times; the view keeps one time per
// file) and draftfs's extra sha256 line, which must be the file's.
func sameInfo(content string) check { return infoCheck(content, timeLine) }

// sameInfoWritten: sameInfo for a file both servers wrote, at their own
// times.
func sameInfoWritten(content string) check { return infoCheck(content, anyTimeLine) }

func infoCheck(content string, timeLine *regexp.Regexp) check {
	return func(t *testing.T, ref, got answer) {
		t.Helper()
		for _, a := range []answer{ref, got} {
			if n := len(timeLine.FindAllString(a.text(), -1)); n < 2 {
				t.Errorf("no times in %q", a.text())
			}
		}
		g := timeLine.ReplaceAllString(got.text(), "$1: T")
		r := timeLine.ReplaceAllString(ref.text(), "$1: T")
		if content != "" {
			sum := sha256.Sum256([]byte(content))
			want := "\nsha256: " + hex.EncodeToString(sum[:])
			if !strings.HasSuffix(g, want) {
				t.Errorf("draftfs's info does not end with %q: %q", want, g)
			}
			g = strings.TrimSuffix(g, want)
		}
		if g != r || got.IsError != ref.IsError {
			t.Errorf("file info differs\nreference: %q\ndraftfs:   %q", r, g)
		}
	}
}

// differs: draftfs answers as want says, where it differs on purpose.
func differs(why string, want func(t *testing.T, ref, got answer)) check {
	return func(t *testing.T, ref, got answer) {
		t.Helper()
		t.Logf("intended difference: %s", why)
		want(t, ref, got)
	}
}

// buildDraftfs builds cmd/draftfs for the test.
func buildDraftfs(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "draftfs")
	cmd := exec.Command("go", "build", "-o", bin, "../../cmd/draftfs")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/draftfs: %v\n%s", err, out)
	}
	return bin
}

// startDaemon runs `draftfs serve` for a workspace until the test ends
// (or stop is called) and waits for its ready line.
func startDaemon(t *testing.T, bin, workspace, stateRoot string) (stop func()) {
	t.Helper()
	cmd := exec.Command(bin, "--workspace", workspace, "--state", stateRoot, "serve")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("draftfs serve: %v\n%s", err, stderr.String())
		}
	}
	t.Cleanup(stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, "serving") {
		t.Fatalf("draftfs serve did not get ready: %q %v\n%s", line, err, stderr.String())
	}
	go io.Copy(io.Discard, out)
	return stop
}

// runClient runs the TypeScript SDK client with steps against a server
// command, and returns one answer per step. ROOT in the steps stands for
// root; in the answers root is written ROOT and its parent PARENT.
func runClient(t *testing.T, roots []string, steps []step, root string, server ...string) []answer {
	t.Helper()
	dir := peers.Dir(t)
	script := filepath.Join(t.TempDir(), "script.json")
	in := map[string]any{"steps": steps}
	if roots != nil {
		in["roots"] = roots
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte("ROOT"), []byte(root))
	if err := os.WriteFile(script, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", append([]string{filepath.Join(dir, "mcp", "client.mjs"), script, "--"}, server...)...)
	cmd.Env = append(os.Environ(), "TZ=UTC")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(server, " "), err, stderr.String())
	}
	out = bytes.ReplaceAll(out, []byte(root), []byte("ROOT"))
	out = bytes.ReplaceAll(out, []byte(filepath.Dir(root)), []byte("PARENT"))
	var answers []answer
	if err := json.Unmarshal(out, &answers); err != nil {
		t.Fatalf("client output: %v\n%s", err, out)
	}
	if len(answers) != len(steps) {
		t.Fatalf("%d answers for %d steps", len(answers), len(steps))
	}
	return answers
}

// servers are the two trees and the commands that serve them: the
// reference, and `draftfs mcp` reaching a running `draftfs serve` over
// its socket, with an editor buffer pushed by `draftfs buffer open`.
type servers struct {
	refRoot, draftRoot string
	state              string // the draft workspace's state directory
	ref, draft         []string
	stop               func() // stops the daemon, before the state is read
}

func newServers(t *testing.T) servers {
	dir := peers.Dir(t)
	base := t.TempDir()
	s := servers{
		refRoot:   filepath.Join(base, "ref", "tree"),
		draftRoot: filepath.Join(base, "draft", "tree"),
	}
	makeTree(t, s.refRoot)
	makeTree(t, s.draftRoot)
	s.ref = []string{"node", filepath.Join(dir, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), s.refRoot}
	bin := buildDraftfs(t)
	stateRoot := filepath.Join(base, "state")
	s.stop = startDaemon(t, bin, s.draftRoot, stateRoot)
	open := exec.Command(bin, "--workspace", s.draftRoot, "--state", stateRoot, "buffer", "open", filepath.Join(s.draftRoot, "open.txt"))
	open.Stdin = strings.NewReader(openBuffer)
	if out, err := open.CombinedOutput(); err != nil {
		t.Fatalf("draftfs buffer open: %v\n%s", err, out)
	}
	s.state = overlay.StateDir(stateRoot, s.draftRoot)
	s.draft = []string{bin, "--workspace", s.draftRoot, "--state", stateRoot, "mcp", s.draftRoot}
	return s
}

func runBoth(t *testing.T, s servers, roots func(root string) []string, steps []step) {
	t.Helper()
	var refRoots, draftRoots []string
	if roots != nil {
		refRoots, draftRoots = roots(s.refRoot), roots(s.draftRoot)
	}
	ref := runClient(t, refRoots, steps, s.refRoot, s.ref...)
	got := runClient(t, draftRoots, steps, s.draftRoot, s.draft...)
	for i, st := range steps {
		if st.check == nil {
			continue
		}
		t.Run(stepName(i, st), func(t *testing.T) { st.check(t, ref[i], got[i]) })
	}
}

func stepName(i int, st step) string {
	name := st.Name
	if name == "" {
		name = st.Op
	}
	return fmt.Sprintf("%03d-%s", i, name)
}

func TestDifferential(t *testing.T) {
	s := newServers(t)
	p := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	read := func(path string, kv ...any) step {
		return call("read_text_file", p(append([]any{"path", path}, kv...)...), nil)
	}
	steps := []step{
		{Op: "tools", check: compareTools},
		call("list_allowed_directories", nil, nil),

		read("a.txt"), read("ROOT/a.txt"), read("./sub/../a.txt"), read("crlf.txt"), read("empty.txt"),
		read("nonl.txt"), read("unicode.txt"), read("latin1.txt"), read("latin1.txt", "tail", 1),
		call("edit_file", p("path", "latin1.txt", "edits", []map[string]any{{"oldText": "na", "newText": "NA"}}, "dryRun", true), nil), read("long.txt"), read("alink"), read("sublink/y.ts"),
		read("links/inside"), read("code.go", "head", 3), read("code.go", "tail", 2), read("long.txt", "head", 5),
		read("long.txt", "tail", 7), read("long.txt", "tail", 300), read("crlf.txt", "head", 2), read("crlf.txt", "tail", 2),
		read("a.txt", "tail", 1), read("a.txt", "tail", 2), read("a.txt", "head", 1.5), read("long.txt", "tail", 2.7),
		read("a.txt", "head", -1), read("a.txt", "tail", -2), read("nonl.txt", "tail", 5), read("empty.txt", "head", 3),
		read("a.txt", "head", 0, "tail", 1), read("a.txt", "head", 1, "tail", 1),
		read("missing.txt"), read("sub"), read("a.txt/x"), read("/etc/passwd"), read("../x"), read("links/dangle"),
		read("nowhere/x.txt"), read("a.txt/"), read(""), read("sub//deep/./x.go"),
		call("list_directory", p("path", "sub/"), sameLines),
		call("list_directory", p("path", ""), sameLines),
		call("read_text_file", p("path", "links/evil"), samePrefix("Access denied - symlink target outside allowed directories: ")),
		call("read_text_file", p("path", "links/outdir/etc/passwd"), samePrefix("Access denied - symlink target outside allowed directories: ")),
		call("read_text_file", nil, nil),
		call("read_text_file", p("path", 5), nil),
		call("read_text_file", p("path", "a.txt", "head", "x"), nil),
		call("read_file", p("path", "a.txt"), nil),
		call("no_such_tool", nil, nil),
		call("read_text_file", p("path", "open.txt"), differs("draftfs shows the editor's unsaved text", func(t *testing.T, ref, got answer) {
			if ref.text() != fixtureFiles["open.txt"] || got.text() != openBuffer {
				t.Errorf("reference read %q (want the disk's), draftfs %q (want the buffer's)", ref.text(), got.text())
			}
		})),
		call("read_text_file", p("path", "data.bin"), differs("draftfs refuses binary files as text", func(t *testing.T, ref, got answer) {
			if ref.IsError || !got.IsError || !strings.Contains(got.text(), "binary file") {
				t.Errorf("reference error=%v, draftfs error=%v %q", ref.IsError, got.IsError, got.text())
			}
		})),

		call("read_media_file", p("path", "image.png"), sameWhole),
		call("read_media_file", p("path", "sound.mp3"), sameWhole),
		call("read_media_file", p("path", "data.bin"), sameWhole),
		call("read_media_file", p("path", "a.txt"), sameWhole),
		call("read_media_file", p("path", "missing.png"), nil),
		call("read_multiple_files", p("paths", []string{"a.txt", "missing.txt", "sub/y.ts", "ROOT/crlf.txt", "/etc/passwd"}), nil),
		call("read_multiple_files", p("paths", []string{}), nil),

		call("list_directory", p("path", "."), sameLines),
		call("list_directory", p("path", "sub"), sameLines),
		call("list_directory", p("path", "emptydir"), nil),
		call("list_directory", p("path", "links"), sameLines),
		call("list_directory", p("path", "a.txt"), nil),
		call("list_directory", p("path", "nope"), nil),
		call("list_directory_with_sizes", p("path", "."), nil),
		call("list_directory_with_sizes", p("path", "sub", "sortBy", "size"), sizeOrder),
		call("list_directory_with_sizes", p("path", ".", "sortBy", "size"), sizeOrder),
		call("list_directory_with_sizes", p("path", "emptydir"), nil),
		call("list_directory_with_sizes", p("path", ".", "sortBy", "date"), nil),
		call("list_directory_with_sizes", p("path", "links"), differs("symlinks leading out of the workspace count 0 bytes: draftfs does not stat outside", func(t *testing.T, ref, got answer) {
			evil := regexp.MustCompile(`(?m)^\[FILE\] evil +(.*)$`)
			r, g := evil.FindStringSubmatch(ref.text()), evil.FindStringSubmatch(got.text())
			if r == nil || g == nil || strings.TrimSpace(g[1]) != "0 B" || strings.TrimSpace(r[1]) == "0 B" {
				t.Errorf("evil's size: reference %q, draftfs %q", r, g)
			}
		})),

		call("directory_tree", p("path", "."), sameTree),
		call("directory_tree", p("path", "sub"), sameTree),
		call("directory_tree", p("path", ".", "excludePatterns", []string{"sub", "node_modules"}), sameTree),
		call("directory_tree", p("path", ".", "excludePatterns", []string{"*.txt", "**/deep"}), sameTree),
		call("directory_tree", p("path", "emptydir"), sameTree),
		call("directory_tree", p("path", "a.txt"), nil),

		call("search_files", p("path", ".", "pattern", "**/*.ts"), sameLines),
		call("search_files", p("path", ".", "pattern", "*.txt"), sameLines),
		call("search_files", p("path", ".", "pattern", "**/*", "excludePatterns", []string{"sub/**", "node_modules"}), sameLines),
		call("search_files", p("path", ".", "pattern", "**/*.{go,md}"), sameLines),
		call("search_files", p("path", ".", "pattern", "**/.hidden"), sameLines),
		call("search_files", p("path", "sub", "pattern", "deep/*"), sameLines),
		call("search_files", p("path", ".", "pattern", "links/*"), sameLines),
		call("search_files", p("path", ".", "pattern", "nothing-*"), nil),
		call("search_files", p("path", "a.txt", "pattern", "*"), nil),
		call("search_files", p("path", ".", "pattern", "[a-"), differs("draftfs refuses an unclosed bracket instead of matching it literally", func(t *testing.T, ref, got answer) {
			if ref.text() != "No matches found" || !got.IsError || !strings.Contains(got.text(), "invalid glob pattern") {
				t.Errorf("reference %q, draftfs error=%v %q", ref.text(), got.IsError, got.text())
			}
		})),

		call("get_file_info", p("path", "a.txt"), sameInfo(fixtureFiles["a.txt"])),
		call("get_file_info", p("path", "script.sh"), sameInfo("#!/bin/sh\necho hi\n")),
		call("get_file_info", p("path", "sub"), sameInfo("")),
		call("get_file_info", p("path", "missing"), nil),

		// Writes.
		call("write_file", p("path", "new.txt", "content", "fresh\ntext\n"), nil),
		call("write_file", p("path", "a.txt", "content", "replaced\n"), nil),
		call("write_file", p("path", "script.sh", "content", "#!/bin/sh\necho bye\n"), nil),
		call("write_file", p("path", "nodir/x.txt", "content", "x"), nil),
		call("write_file", p("path", "sub", "content", "x"), samePrefix("EISDIR: illegal operation on a directory, ")),
		call("write_file", p("path", "links/evil", "content", "x"), samePrefix("Access denied - symlink target outside allowed directories: ")),
		call("edit_file", p("path", "long.txt", "edits", []map[string]any{{"oldText": "line 3 ababab\n", "newText": "line three\n"}}, "dryRun", true), nil),
		call("edit_file", p("path", "long.txt", "edits", []map[string]any{
			{"oldText": "line 3 ababab", "newText": "line three"},
			{"oldText": "line 200 " + strings.Repeat("ab", 200%37), "newText": "line 200\nline 200½"},
		}), nil),
		call("edit_file", p("path", "code.go", "edits", []map[string]any{{"oldText": "if x {\n  return\n}", "newText": "if y {\n    panic(1)\n  }"}}), nil),
		call("edit_file", p("path", "crlf.txt", "edits", []map[string]any{{"oldText": "y\r\n", "newText": "why\n"}}), nil),
		call("edit_file", p("path", "a.txt", "edits", []map[string]any{{"oldText": "nomatch", "newText": "x"}}), nil),
		call("edit_file", p("path", "a.txt", "edits", []map[string]any{{"oldText": 1}}), nil),
		call("create_directory", p("path", "newdir/a/b"), nil),
		call("create_directory", p("path", "sub"), nil),
		call("create_directory", p("path", "a.txt"), nil),
		call("create_directory", p("path", "a.txt/b"), nil),
		call("move_file", p("source", "new.txt", "destination", "sub/moved.txt"), nil),
		call("move_file", p("source", "sub/deep", "destination", "newdir/deep"), nil),
		call("move_file", p("source", "nope", "destination", "nope2"), nil),
		call("move_file", p("source", "a.txt", "destination", "sub"), nil),
		call("move_file", p("source", "a.txt", "destination", "nodir/a.txt"), nil),
		call("move_file", p("source", "newdir", "destination", "newdir/inner"), nil),
		call("move_file", p("source", "emptydir", "destination", "a.txt/x"), nil),
		call("create_directory", p("path", ""), nil),

		// What the writes left, through the tools.
		read("a.txt"), read("sub/moved.txt"), read("long.txt"), read("code.go"), read("newdir/deep/x.go"),
		call("read_text_file", p("path", "crlf.txt"), differs("edit_file keeps a CRLF file's line ends", func(t *testing.T, ref, got answer) {
			if ref.text() != "x\nwhy\nz" || got.text() != "x\r\nwhy\r\nz" {
				t.Errorf("reference %q, draftfs %q", ref.text(), got.text())
			}
		})),
		read("new.txt"), read("script.sh"),
		call("list_directory", p("path", "newdir"), sameLines),
		call("directory_tree", p("path", "."), sameTree),
		call("search_files", p("path", ".", "pattern", "**/*.go"), sameLines),
		call("get_file_info", p("path", "script.sh"), sameInfoWritten("#!/bin/sh\necho bye\n")),
	}
	runBoth(t, s, nil, steps)

	// The reference wrote its disk; draftfs's disk is as it was, and its
	// merged view holds what the reference's disk holds.
	s.stop()
	want := diskSnapshot(t, s.refRoot)
	original := t.TempDir()
	makeTree(t, original)
	compareSnapshots(t, "draftfs's disk after the writes", diskSnapshot(t, s.draftRoot), diskSnapshot(t, original))
	_, _, view := openView(t, s.draftRoot, s.state)
	got := viewSnapshot(t, view)
	// Intended differences: the buffer (gone with the server process; its
	// disk text shows) and crlf.txt, whose edit keeps its CRLF line ends.
	if want["crlf.txt"] != "x\nwhy\nz" || got["crlf.txt"] != "x\r\nwhy\r\nz" {
		t.Errorf("crlf.txt: reference %q (LF), draftfs %q (CRLF kept)", want["crlf.txt"], got["crlf.txt"])
	}
	got["crlf.txt"] = want["crlf.txt"]
	compareSnapshots(t, "draftfs's merged view vs the reference's disk", got, want)
}

// sizeOrder: the same lines, draftfs's sorted by size, largest first
// (entries of one size come in name order here, in disk order there).
func sizeOrder(t *testing.T, ref, got answer) {
	t.Helper()
	sameLines(t, ref, got)
	sizes := regexp.MustCompile(`(?m)^\[(?:FILE|DIR)\] .{30} +(.*)$`)
	var order []string
	for _, m := range sizes.FindAllStringSubmatch(got.text(), -1) {
		order = append(order, m[1])
	}
	var refOrder []string
	for _, m := range sizes.FindAllStringSubmatch(ref.text(), -1) {
		refOrder = append(refOrder, m[1])
	}
	if !slices.Equal(order, refOrder) {
		t.Errorf("sizes in order %q, the reference %q", order, refOrder)
	}
}

// draftfsTools are the tools draftfs adds to the reference's.
var draftfsTools = []string{"append_file", "copy_file", "delete_file", "draft_diff", "draft_status", "restore_file", "search_content"}

// compareTools: the reference's tools with the same names, titles,
// descriptions, input schemas and annotations (absent hints read as their
// defaults), output schemas that accept what the reference's do, and
// draftfs's own tools besides.
func compareTools(t *testing.T, ref, got answer) {
	t.Helper()
	mine := map[string]map[string]any{}
	for _, tl := range got.Tools {
		mine[tl["name"].(string)] = tl
	}
	for _, r := range ref.Tools {
		name := r["name"].(string)
		g := mine[name]
		if g == nil {
			t.Errorf("tool %s missing", name)
			continue
		}
		delete(mine, name)
		for _, k := range []string{"title", "description", "inputSchema"} {
			if !reflect.DeepEqual(r[k], g[k]) {
				t.Errorf("%s %s:\nreference %v\ndraftfs   %v", name, k, r[k], g[k])
			}
		}
		if ra, ga := hints(r["annotations"]), hints(g["annotations"]); !reflect.DeepEqual(ra, ga) {
			t.Errorf("%s annotations: reference %v, draftfs %v", name, ra, ga)
		}
		ro, go_ := r["outputSchema"].(map[string]any), g["outputSchema"].(map[string]any)
		rp, gp := ro["properties"].(map[string]any), go_["properties"].(map[string]any)
		for k, v := range rp {
			if !reflect.DeepEqual(v, gp[k]) {
				t.Errorf("%s output property %s: reference %v, draftfs %v", name, k, v, gp[k])
			}
		}
		if !reflect.DeepEqual(ro["required"], go_["required"]) {
			t.Errorf("%s output required: reference %v, draftfs %v", name, ro["required"], go_["required"])
		}
	}
	var extra []string
	for name := range mine {
		extra = append(extra, name)
	}
	sort.Strings(extra)
	if !slices.Equal(extra, draftfsTools) {
		t.Errorf("draftfs's own tools %v, want %v", extra, draftfsTools)
	}
}

// hints are a tool's annotations with the defaults the spec gives absent
// ones (the Go SDK writes readOnlyHint and idempotentHint always).
func hints(v any) map[string]any {
	out := map[string]any{"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true}
	m, _ := v.(map[string]any)
	for k, x := range m {
		out[k] = x
	}
	if out["readOnlyHint"] == true {
		// Meaningless for read-only tools.
		delete(out, "destructiveHint")
		delete(out, "idempotentHint")
	}
	return out
}
