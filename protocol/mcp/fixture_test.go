package mcp

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/agent"
)

// fixtureTime is every fixture file's modification time, so two copies
// of the tree report the same times.
var fixtureTime = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// longText has lines of varied length, more than tailChunk apart, so head
// and tail cross the reference's 1 KiB read blocks.
func longText() string {
	var b strings.Builder
	for i := range 400 {
		fmt.Fprintf(&b, "line %d %s\n", i, strings.Repeat("ab", i%37))
	}
	return b.String()
}

// fixtureFiles is the tree both servers get: text in several shapes,
// binaries, names that sort differently by bytes and by locale, and
// symlinks that stay inside, leave, or lead nowhere.
var fixtureFiles = map[string]string{
	"a.txt":               "hello\nworld\n",
	"crlf.txt":            "x\r\ny\r\nz",
	"empty.txt":           "",
	"nonl.txt":            "no newline at the end",
	"long.txt":            longText(),
	"unicode.txt":         "héllo wörld ✓ 😀\nsecond\n",
	"latin1.txt":          "caf\xe9 na\xc3\xafve \xe2\x82\n\xff end\n",
	"open.txt":            "saved on disk\n",
	"code.go":             "package main\n\nfunc main() {\n\tif x {\n\t\treturn\n\t}\n}\n",
	"B.txt":               "upper\n",
	"a_b.txt":             "underscore\n",
	"a-b.txt":             "dash\n",
	"_under":              "leading underscore\n",
	"10.txt":              "ten\n",
	"9.txt":               "nine\n",
	"Zeta":                "zeta\n",
	"image.png":           "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
	"sound.mp3":           "ID3\x03\x00\x00\x00",
	"data.bin":            "\x00\x01\x02binary\xff",
	"sub/y.ts":            "export const y = 1;\n",
	"sub/.hidden":         "hidden\n",
	"sub/deep/x.go":       "package deep\n\nfunc X() {}\n",
	"sub/deep/notes.md":   "# notes\n",
	"node_modules/m/i.js": "module.exports = 1;\n",
}

// fixtureLinks are the symlinks, by path and target.
var fixtureLinks = map[string]string{
	"alink":         "a.txt",
	"sublink":       "sub",
	"links/evil":    "/etc/passwd",
	"links/dangle":  "../nowhere",
	"links/outdir":  "../../..",
	"links/inside":  "../sub/y.ts",
	"links/deepdir": "../sub/deep",
}

// openBuffer is the unsaved editor text draftfs shows for open.txt (the
// same size as the disk's, so listings with sizes agree).
const openBuffer = "SAVED ON DISK\n"

// makeTree writes the fixture under dir.
func makeTree(t testing.TB, dir string) {
	t.Helper()
	for p, text := range fixtureFiles {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"emptydir", "links"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "script.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, target := range fixtureLinks {
		if err := os.Symlink(target, filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type() == fs.ModeSymlink {
			return err
		}
		return os.Chtimes(p, fixtureTime, fixtureTime)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// snapshot is a tree's content: files by path, "dir" for directories,
// "symlink" for symlinks.
type snapshot map[string]string

func diskSnapshot(t testing.TB, dir string) snapshot {
	t.Helper()
	out := snapshot{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case rel == ".":
		case d.Type() == fs.ModeSymlink:
			out[rel] = "symlink"
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// viewSnapshot is the merged view's content.
func viewSnapshot(t testing.TB, f agent.Files) snapshot {
	t.Helper()
	out := snapshot{}
	var walk func(key string)
	walk = func(key string) {
		ents, err := f.ReadDir(key)
		if err != nil {
			t.Fatalf("ReadDir(%q): %v", key, err)
		}
		for _, e := range ents {
			k := joinKey(key, e.Name)
			switch {
			case e.Mode.Type() == fs.ModeSymlink:
				out[k] = "symlink"
			case e.IsDir():
				out[k] = "dir"
				walk(k)
			default:
				b, err := f.ReadFile(k, 0)
				if err != nil {
					t.Fatalf("ReadFile(%q): %v", k, err)
				}
				out[k] = string(b)
			}
		}
	}
	walk("")
	return out
}

// compareSnapshots reports every path where two trees differ.
func compareSnapshots(t testing.TB, what string, got, want snapshot) {
	t.Helper()
	for p, w := range want {
		if g, ok := got[p]; !ok {
			t.Errorf("%s: %s missing (want %q)", what, p, w)
		} else if g != w {
			t.Errorf("%s: %s = %q, want %q", what, p, g, w)
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: unexpected %s = %q", what, p, g)
		}
	}
}

// openView opens the engine on a workspace and state directory.
func openView(t testing.TB, root, state string) (*overlay.Workspace, *overlay.Draft, agent.Files) {
	t.Helper()
	ws, err := overlay.Open(overlay.Options{Root: root, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ws.Close(); err != nil {
			t.Error(err)
		}
	})
	d, err := ws.Draft("main")
	if err != nil {
		t.Fatal(err)
	}
	return ws, d, agent.NewLocal(d, overlay.SourceMCP)
}
