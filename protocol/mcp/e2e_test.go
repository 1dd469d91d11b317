package mcp

import (
	"slices"
	"strings"
	"testing"
)

// TestDifferentialRoots: the client's roots replace the allowed
// directories given as arguments, at initialization and on
// notifications/roots/list_changed.
func TestDifferentialRoots(t *testing.T) {
	s := newServers(t)
	p := func(path string) map[string]any { return map[string]any{"path": path} }
	settle := step{Op: "sleep", MS: 500} // the reference applies new roots asynchronously
	steps := []step{
		settle,
		call("list_allowed_directories", nil, nil),
		call("read_text_file", p("y.ts"), nil),
		call("read_text_file", p("ROOT/sub/y.ts"), nil),
		call("read_text_file", p("ROOT/a.txt"), nil),
		call("read_text_file", p("../a.txt"), nil),
		call("list_directory", p("."), sameLines),
		{Op: "roots", Roots: []string{"file://ROOT/sub/deep", "file:///nonexistent/dir", "file://ROOT/emptydir"}},
		settle,
		call("list_allowed_directories", nil, nil),
		call("read_text_file", p("x.go"), nil),
		call("read_text_file", p("ROOT/sub/y.ts"), nil),
		{Op: "roots", Roots: []string{"file:///nonexistent/dir"}},
		settle,
		call("list_allowed_directories", nil, nil),
		{Op: "roots", Roots: []string{"file://ROOT"}},
		settle,
		call("list_allowed_directories", nil, nil),
		call("read_text_file", p("a.txt"), nil),
		{Op: "roots", Roots: []string{"file://ROOT/.."}},
		settle,
		call("list_allowed_directories", nil, differs("a root above the workspace allows the workspace, all the merged view has", func(t *testing.T, ref, got answer) {
			if ref.text() != "Allowed directories:\nPARENT" || got.text() != "Allowed directories:\nROOT" {
				t.Errorf("reference %q, draftfs %q", ref.text(), got.text())
			}
		})),
		call("read_text_file", p("ROOT/a.txt"), nil),
	}
	runBoth(t, s, func(root string) []string { return []string{"file://" + root + "/sub"} }, steps)
}

// TestResourcesWithSDKClient: files are resources the TypeScript client
// reads and subscribes to; a write through a tool notifies subscribers of
// the file and of the directories above it.
func TestResourcesWithSDKClient(t *testing.T) {
	s := newServers(t)
	steps := []step{
		{Op: "read", URI: "file://ROOT/a.txt"},
		{Op: "read", URI: "file://ROOT/open.txt"},
		{Op: "read", URI: "file://ROOT/image.png"},
		{Op: "read", URI: "file://ROOT/sub"},
		{Op: "read", URI: "file://ROOT/missing.txt"},
		{Op: "read", URI: "file://ROOT/links/evil"},
		{Op: "subscribe", URI: "file://ROOT/a.txt"},
		{Op: "subscribe", URI: "file://ROOT/sub"},
		call("write_file", map[string]any{"path": "a.txt", "content": "changed\n"}, nil),
		{Op: "updates", MS: 500},
		call("write_file", map[string]any{"path": "sub/deep/new.txt", "content": "new\n"}, nil),
		{Op: "updates", MS: 500},
		call("write_file", map[string]any{"path": "code.go", "content": "x"}, nil),
		{Op: "updates", MS: 500},
	}
	got := runClient(t, nil, steps, s.draftRoot, s.draft...)
	contents := func(a answer) map[string]any {
		if len(a.Contents) != 1 {
			t.Fatalf("contents %v (error %q)", a.Contents, a.Error)
		}
		return a.Contents[0]
	}
	if c := contents(got[0]); c["text"] != fixtureFiles["a.txt"] || c["uri"] != "file://ROOT/a.txt" || c["mimeType"] != "text/plain" {
		t.Errorf("a.txt: %v", c)
	}
	if c := contents(got[1]); c["text"] != openBuffer {
		t.Errorf("open.txt: %v, want the editor's text %q", c, openBuffer)
	}
	if c := contents(got[2]); c["mimeType"] != "image/png" || c["blob"] == nil {
		t.Errorf("image.png: %v", c)
	}
	if c := contents(got[3]); !strings.Contains(c["text"].(string), "[DIR] deep") {
		t.Errorf("sub: %v", c)
	}
	if !strings.Contains(got[4].Error, "Resource not found") {
		t.Errorf("missing.txt: %+v", got[4])
	}
	if !strings.Contains(got[5].Error, "Access denied") {
		t.Errorf("links/evil: %+v", got[5])
	}
	// One write may be several changes (directories, creation, content),
	// each notified.
	uniq := func(uris []string) []string { return slices.Compact(slices.Sorted(slices.Values(uris))) }
	if want := []string{"file://ROOT/a.txt"}; !slices.Equal(uniq(got[9].URIs), want) {
		t.Errorf("after writing a.txt: updates %v, want %v", got[9].URIs, want)
	}
	if want := []string{"file://ROOT/sub"}; !slices.Equal(uniq(got[11].URIs), want) {
		t.Errorf("after writing sub/deep/new.txt: updates %v, want %v", got[11].URIs, want)
	}
	if len(got[13].URIs) != 0 {
		t.Errorf("after writing code.go (not subscribed): updates %v", got[13].URIs)
	}
}

// TestLargeMessages: a write larger than the SDK's default 16 MiB message
// limit lands, the file is then too large to read whole, and the session
// goes on.
func TestLargeMessages(t *testing.T) {
	s := newServers(t)
	big := strings.Repeat("0123456789abcdef\n", 20<<20/17)
	steps := []step{
		call("write_file", map[string]any{"path": "big.txt", "content": big}, nil),
		call("read_text_file", map[string]any{"path": "big.txt", "head": 1}, nil),
		call("read_text_file", map[string]any{"path": "a.txt"}, nil),
	}
	got := runClient(t, nil, steps, s.draftRoot, s.draft...)
	if got[0].IsError || got[0].Error != "" {
		t.Fatalf("write_file: %+v", got[0])
	}
	if !got[1].IsError || !strings.Contains(got[1].text(), "File too large: ROOT/big.txt is 20.00 MB, over the 10.00 MB limit") {
		t.Errorf("read_text_file big.txt: %+v", got[1].text())
	}
	if got[2].text() != fixtureFiles["a.txt"] {
		t.Errorf("after: %+v", got[2])
	}
}
