//go:build linux

package overlay

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/afero"
)

func hkWrite(t *testing.T, f afero.Fs, name, content string) {
	t.Helper()
	must(t, afero.WriteFile(f, name, []byte(content), 0o644))
}

func hkRead(t *testing.T, f afero.Fs, name string) string {
	t.Helper()
	b, err := afero.ReadFile(f, name)
	must(t, err)
	return string(b)
}

const hunkBase = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\no\np\n"

// hunksOf returns the hunks of key's diff.
func hunksOf(t *testing.T, d *Draft, key string) []Hunk {
	t.Helper()
	diffs, err := d.Diff(key)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 1 {
		t.Fatalf("diff of %s: %d files", key, len(diffs))
	}
	return diffs[0].Hunks
}

// Committing one hunk of two writes just it to disk, leaves the other in
// the draft (its diff now the other hunk alone), and undo puts both
// back as they were.
func TestCommitHunks(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"x": hunkBase})
	agent := strings.Replace(strings.Replace(hunkBase, "b\n", "B\n", 1), "o\n", "O\n", 1)
	hkWrite(t, f, "x", agent)
	hs := hunksOf(t, d, "x")
	if len(hs) != 2 || hs[0].Whole || hs[0].NewStart != 2 || hs[0].NewLines != 1 {
		t.Fatalf("hunks: %+v", hs)
	}
	again := hunksOf(t, d, "x")
	if again[0].ID != hs[0].ID || again[1].ID != hs[1].ID {
		t.Fatalf("IDs not stable: %v %v", hs, again)
	}
	res, err := d.Commit(CommitOptions{Hunks: []string{hs[0].ID}, Source: SourceCLI})
	if err != nil {
		t.Fatal(err)
	}
	disk := strings.Replace(hunkBase, "b\n", "B\n", 1)
	cmEqualTree(t, root, map[string]string{"x": disk})
	if got := hkRead(t, f, "x"); got != agent {
		t.Fatalf("view after the commit: %q", got)
	}
	left := hunksOf(t, d, "x")
	if len(left) != 1 || !strings.Contains(left[0].Text, "+O\n") || strings.Contains(left[0].Text, "+B") {
		t.Fatalf("left: %+v", left)
	}
	// The old ID names nothing now.
	if _, err := d.Commit(CommitOptions{Hunks: []string{hs[1].ID}}); !errors.Is(err, ErrNoHunk) {
		t.Fatalf("commit of a stale hunk: %v", err)
	}
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatalf("undo of commit %d: %v", res.ID, err)
	}
	cmEqualTree(t, root, map[string]string{"x": hunkBase})
	if got := hkRead(t, f, "x"); got != agent {
		t.Fatalf("view after the undo: %q", got)
	}
	if back := hunksOf(t, d, "x"); len(back) != 2 || back[0].ID != hs[0].ID || back[1].ID != hs[1].ID {
		t.Fatalf("hunks after the undo: %+v", back)
	}
	// Both hunks: the whole file, and the draft is empty.
	if _, err := d.Commit(CommitOptions{Hunks: []string{hs[0].ID, hs[1].ID}}); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"x": agent})
	if st, _ := d.Status(); len(st) != 0 {
		t.Fatalf("status after committing every hunk: %v", st)
	}
}

// A hunk of a file the user changed too is taken from the 3-way merge:
// the user's change stays, and the draft is rebased on what was written.
func TestCommitHunksMerged(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"x": hunkBase})
	agent := strings.Replace(strings.Replace(hunkBase, "b\n", "B\n", 1), "o\n", "O\n", 1)
	hkWrite(t, f, "x", agent)
	user := strings.Replace(hunkBase, "h\n", "H\n", 1)
	must(t, os.WriteFile(filepath.Join(root, "x"), []byte(user), 0o644))
	hs := hunksOf(t, d, "x")
	if len(hs) != 2 {
		t.Fatalf("hunks: %+v", hs)
	}
	if _, err := d.Commit(CommitOptions{Hunks: []string{hs[1].ID}}); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"x": strings.Replace(user, "o\n", "O\n", 1)})
	diffs, err := d.Diff("x")
	if err != nil || len(diffs) != 1 || diffs[0].Merged || len(diffs[0].Hunks) != 1 || !strings.Contains(diffs[0].Hunks[0].Text, "+B\n") {
		t.Fatalf("diff after: %+v %v", diffs, err)
	}
	if got := hkRead(t, f, "x"); got != strings.Replace(agent, "h\n", "H\n", 1) {
		t.Fatalf("view after: %q", got)
	}
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"x": user})
	if got := hkRead(t, f, "x"); got != agent {
		t.Fatalf("view after the undo: %q", got)
	}
}

// Discarding a hunk rewrites the draft without it; a split part is a
// hunk of its own; discarding every hunk drops the file.
func TestDiscardHunks(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"x": hunkBase})
	agent := strings.Replace(strings.Replace(strings.Replace(hunkBase, "b\n", "B\n", 1), "d\n", "D\n", 1), "o\n", "O\n", 1)
	hkWrite(t, f, "x", agent)
	hs := hunksOf(t, d, "x")
	if len(hs) != 2 || len(hs[0].Parts) != 2 {
		t.Fatalf("hunks: %+v", hs)
	}
	if _, err := d.DiscardHunks([]string{hs[0].Parts[1].ID}, SourceCLI); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(strings.Replace(hunkBase, "b\n", "B\n", 1), "o\n", "O\n", 1)
	if got := hkRead(t, f, "x"); got != want {
		t.Fatalf("view: %q, want %q", got, want)
	}
	cmEqualTree(t, root, map[string]string{"x": hunkBase})
	left := hunksOf(t, d, "x")
	ids := []string{}
	for _, h := range left {
		ids = append(ids, h.ID)
	}
	if len(ids) != 2 {
		t.Fatalf("left: %+v", left)
	}
	if _, err := d.DiscardHunks(ids, SourceCLI); err != nil {
		t.Fatal(err)
	}
	if st, _ := d.Status(); len(st) != 0 {
		t.Fatalf("status after discarding every hunk: %v", st)
	}
	if got := hkRead(t, f, "x"); got != hunkBase {
		t.Fatalf("view: %q", got)
	}
}

// A new file is one whole hunk.
func TestHunkWhole(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"x": hunkBase})
	hkWrite(t, f, "new", "n\n")
	hs := hunksOf(t, d, "new")
	if len(hs) != 1 || !hs[0].Whole {
		t.Fatalf("hunks: %+v", hs)
	}
	if _, err := d.Commit(CommitOptions{Hunks: []string{hs[0].ID}}); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"x": hunkBase, "new": "n\n"})
}
