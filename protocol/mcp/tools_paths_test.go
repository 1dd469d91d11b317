package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDraftToolsStayInAllowedDirs: with sub allowed, changes elsewhere
// are not reported.
func TestDraftToolsStayInAllowedDirs(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "tree")
	makeTree(t, root)
	ws, d, f := openView(t, root, filepath.Join(base, "state"))
	if err := f.WriteFile("a.txt", []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := serveEnv(t, root, ws, d, f, withOptions(func(o *Options) { o.Dirs = []string{filepath.Join(root, "sub")} }))
	if got := e.ok("draft_status", nil); got != noChanges {
		t.Errorf("draft_status: %q", got)
	}
	e.ok("write_file", m("path", "z.txt", "content", "z"))
	if got := e.ok("draft_status", nil); got != "A "+e.abs("sub/z.txt") {
		t.Errorf("draft_status: %q", got)
	}
}

func TestAllowedDirectories(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "tree")
	makeTree(t, root)
	_, _, f := openView(t, root, filepath.Join(base, "state"))
	for _, c := range []struct {
		dirs []string
		want []string // nil: New fails
	}{
		{nil, []string{root}},
		{[]string{base}, []string{root}},
		{[]string{"/"}, []string{root}},
		{[]string{filepath.Join(root, "sub"), filepath.Join(root, "emptydir")}, []string{filepath.Join(root, "sub"), filepath.Join(root, "emptydir")}},
		{[]string{filepath.Join(root, "sublink")}, []string{filepath.Join(root, "sublink"), filepath.Join(root, "sub")}},
		{[]string{filepath.Join(root, "sub"), "/etc"}, []string{filepath.Join(root, "sub")}},
		{[]string{"/etc"}, nil},
		{[]string{filepath.Join(root, "a.txt")}, nil},
		{[]string{filepath.Join(root, "missing")}, nil},
	} {
		s, err := New(f, Options{Dirs: c.dirs})
		if c.want == nil {
			if err == nil {
				t.Errorf("%v: New succeeded with %v", c.dirs, s.allowedDirs())
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", c.dirs, err)
			continue
		}
		if got := s.allowedDirs(); strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%v: allowed %v, want %v", c.dirs, got, c.want)
		}
	}
}

// TestRelativePaths: relative paths are taken from the first allowed
// directory that keeps them inside one, as the reference does.
func TestRelativePaths(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "tree")
	makeTree(t, root)
	ws, d, f := openView(t, root, filepath.Join(base, "state"))
	e := serveEnv(t, root, ws, d, f, withOptions(func(o *Options) {
		o.Dirs = []string{filepath.Join(root, "sub"), filepath.Join(root, "sub/deep")}
	}))
	if got := e.ok("read_text_file", m("path", "y.ts")); got != fixtureFiles["sub/y.ts"] {
		t.Errorf("y.ts: %q", got)
	}
	if got := e.ok("read_text_file", m("path", "deep/x.go")); got != fixtureFiles["sub/deep/x.go"] {
		t.Errorf("deep/x.go: %q", got)
	}
	// From sub it leaves; from sub/deep it lands in sub.
	e.fails("read_text_file", m("path", "../a.txt"), "ENOENT: no such file or directory, open '"+e.abs("sub/a.txt")+"'")
	e.fails("read_text_file", m("path", "../../a.txt"), "Access denied - path outside allowed directories: "+filepath.Join(filepath.Dir(e.root), "a.txt")+" not in "+e.abs("sub")+", "+e.abs("sub/deep"))
}

// TestRootsFromClient: a client with roots replaces the allowed
// directories at once and on every change, skipping roots outside the
// workspace and keeping the current ones when no root is usable.
func TestRootsFromClient(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "tree")
	makeTree(t, root)
	ws, d, f := openView(t, root, filepath.Join(base, "state"))
	e := serveEnv(t, root, ws, d, f, withRoots(fileURL(filepath.Join(root, "sub")), "file:///nonexistent"))
	allowed := func(want ...string) {
		t.Helper()
		if got := e.ok("list_allowed_directories", nil); got != "Allowed directories:\n"+strings.Join(want, "\n") {
			t.Errorf("allowed %q, want %q", got, want)
		}
	}
	allowed(filepath.Join(root, "sub"))
	e.fails("read_text_file", m("path", filepath.Join(root, "a.txt")), "Access denied - path outside allowed directories")
	e.client.AddRoots(&sdk.Root{URI: fileURL(filepath.Join(root, "emptydir"))})
	allowed(filepath.Join(root, "emptydir"), filepath.Join(root, "sub")) // the client lists roots by URI
	e.client.RemoveRoots(fileURL(filepath.Join(root, "sub")), fileURL(filepath.Join(root, "emptydir")))
	allowed(filepath.Join(root, "emptydir"), filepath.Join(root, "sub")) // "/nonexistent" alone: kept
	e.client.AddRoots(&sdk.Root{URI: fileURL(base)})
	allowed(root)
	if got := e.ok("read_text_file", m("path", "a.txt")); got != fixtureFiles["a.txt"] {
		t.Errorf("a.txt: %q", got)
	}
}

// TestSymlinkedNames: a workspace or allowed directory reached through a
// symlink answers to both names, as the reference allows both.
func TestSymlinkedNames(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "tree")
	makeTree(t, root)
	link := filepath.Join(base, "link")
	if err := os.Symlink("tree", link); err != nil {
		t.Fatal(err)
	}
	t.Run("allowed dir", func(t *testing.T) {
		ws, d, f := openView(t, root, filepath.Join(base, "state1"))
		e := serveEnv(t, root, ws, d, f, withOptions(func(o *Options) { o.Dirs = []string{filepath.Join(link, "sub")} }))
		if got := e.ok("list_allowed_directories", nil); got != "Allowed directories:\n"+filepath.Join(link, "sub")+"\n"+filepath.Join(root, "sub") {
			t.Errorf("allowed: %q", got)
		}
		for _, p := range []string{filepath.Join(link, "sub/y.ts"), filepath.Join(root, "sub/y.ts"), "y.ts"} {
			if got := e.ok("read_text_file", m("path", p)); got != fixtureFiles["sub/y.ts"] {
				t.Errorf("%s: %q", p, got)
			}
		}
		e.fails("read_text_file", m("path", filepath.Join(link, "a.txt")), "Access denied - path outside allowed directories")
	})
	t.Run("workspace", func(t *testing.T) {
		ws, d, f := openView(t, link, filepath.Join(base, "state2"))
		e := serveEnv(t, link, ws, d, f)
		for _, p := range []string{filepath.Join(link, "a.txt"), filepath.Join(root, "a.txt")} {
			if got := e.ok("read_text_file", m("path", p)); got != fixtureFiles["a.txt"] {
				t.Errorf("%s: %q", p, got)
			}
		}
	})
}
