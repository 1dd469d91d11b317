//go:build linux

package overlay_test

import (
	"io/fs"
	"os"
	"testing"
	"testing/fstest"

	"github.com/spf13/afero"
)

// TestFSConformance runs testing/fstest's checks of io/fs semantics on
// a merged view whose draft modified, added, deleted and renamed files
// and directories, over an editor buffer and a disk tree.
func TestFSConformance(t *testing.T) {
	e := newViewEnv(t, map[string]string{
		"README.md":         "readme\n",
		"go.mod":            "module x\n",
		"src/main.go":       "package main\n",
		"src/util/a.go":     "package util\n",
		"src/util/b.go":     "package util // b\n",
		"docs/old/guide.md": "guide\n",
		"docs/old/faq.md":   "faq\n",
		"gone/x.txt":        "x\n",
		"empty/":            "",
		"link":              "->README.md",
	})
	v := e.v
	must(t, e.bufs.Open("src/main.go", 1, []byte("package main // unsaved\n")))
	must(t, e.bufs.Open("src/new_unsaved.go", 1, []byte("package main\n")))
	mustWrite(t, v, "README.md", "readme, edited by the agent\n") // modified
	mustWrite(t, v, "src/util/c.go", "package util // c\n")       // added
	must(t, v.MkdirAll("src/gen/deep", 0o755))                    // added directories
	mustWrite(t, v, "src/gen/deep/z.go", "package deep\n")        // added below them
	must(t, v.Remove("src/util/b.go"))                            // deleted
	must(t, v.RemoveAll("gone"))                                  // deleted directory
	must(t, v.Rename("docs/old", "docs/new"))                     // renamed directory
	must(t, v.Rename("docs/new/faq.md", "docs/faq.md"))           // renamed file
	must(t, v.Rename("go.mod", "go.mod.bak"))                     // renamed file
	mustWrite(t, v, "docs/new/guide.md", "guide, renamed and edited\n")
	must(t, v.Chmod("src/util/a.go", 0o600))
	must(t, v.RemoveAll("empty"))
	must(t, v.Mkdir("empty", 0o700)) // opaque: made again

	want := []string{
		"README.md", "go.mod.bak", "link",
		"src/main.go", "src/new_unsaved.go",
		"src/util/a.go", "src/util/c.go",
		"src/gen/deep/z.go",
		"docs/faq.md", "docs/new/guide.md",
		"empty",
	}
	fsys := afero.NewIOFS(v)
	if err := fstest.TestFS(fsys, want...); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"go.mod", "src/util/b.go", "gone", "docs/old", "docs/new/faq.md"} {
		if _, err := fs.Stat(fsys, gone); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want it gone", gone, err)
		}
	}
	b, err := fs.ReadFile(fsys, "src/main.go")
	must(t, err)
	if string(b) != "package main // unsaved\n" {
		t.Errorf("src/main.go = %q, want the editor's text", b)
	}

	// The same after the engine is opened again from its state.
	e.reopen()
	if err := fstest.TestFS(afero.NewIOFS(e.v), want...); err != nil {
		t.Fatalf("after reopen: %v", err)
	}
}
