package mcp

import (
	"regexp"
	"strings"
	"testing"
)

// The differential test: one sequence of tool calls, made by the MCP
// TypeScript SDK's client, against the reference server
// (@modelcontextprotocol/server-filesystem) and against this package
// served on stdio, each over its own copy of one tree. Answers must be
// equal once each tree's root is written ROOT, except where draftfs
// differs on purpose; each such step asserts its difference.

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
