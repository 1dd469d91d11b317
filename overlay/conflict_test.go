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

const tenLines = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"

func TestCommitMergesCleanConflict(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"f": tenLines})
	must(t, afero.WriteFile(f, "f", []byte(strings.Replace(tenLines, "9\n", "nine\n", 1)), 0o644))
	cmWrite(t, root, map[string]string{"f": strings.Replace(tenLines, "2\n", "two\n", 1)})
	if got := cmStatus(t, d); got != "C f" {
		t.Fatalf("status %q, want conflict flag", got)
	}
	res, err := d.Commit(CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Merged) != 1 || res.Merged[0] != "f" {
		t.Fatalf("merged %v", res.Merged)
	}
	want := strings.Replace(strings.Replace(tenLines, "2\n", "two\n", 1), "9\n", "nine\n", 1)
	cmEqualTree(t, root, map[string]string{"f": want})
	// Undo puts back the user's version, not the original.
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"f": strings.Replace(tenLines, "2\n", "two\n", 1)})
}

func TestCommitRefusesConflict(t *testing.T) {
	for _, c := range []struct {
		name  string
		draft func(f *Fs) error
		user  func(root string) error
		want  map[string]string // disk after --force
	}{
		{"same line", func(f *Fs) error {
			return afero.WriteFile(f, "f", []byte("draft\n"+tenLines[2:]), 0o644)
		}, func(root string) error {
			return os.WriteFile(filepath.Join(root, "f"), []byte("user\n"+tenLines[2:]), 0o644)
		}, map[string]string{"f": "draft\n" + tenLines[2:], "g": "g\n"}},
		{"user deleted what draft edits", func(f *Fs) error {
			return afero.WriteFile(f, "f", []byte("draft\n"), 0o644)
		}, func(root string) error {
			return os.Remove(filepath.Join(root, "f"))
		}, map[string]string{"f": "draft\n", "g": "g\n"}},
		{"user edited what draft deletes", func(f *Fs) error {
			return f.Remove("f")
		}, func(root string) error {
			return os.WriteFile(filepath.Join(root, "f"), []byte("edited\n"), 0o644)
		}, map[string]string{"g": "g\n"}},
		{"both added", func(f *Fs) error {
			return afero.WriteFile(f, "new", []byte("draft\n"), 0o644)
		}, func(root string) error {
			return os.WriteFile(filepath.Join(root, "new"), []byte("user\n"), 0o644)
		}, map[string]string{"f": tenLines, "g": "g\n", "new": "draft\n"}},
		{"rename source gone", func(f *Fs) error {
			return f.Rename("g", "h")
		}, func(root string) error {
			return os.Remove(filepath.Join(root, "g"))
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, d, f := cmSetup(t, map[string]string{"f": tenLines, "g": "g\n"})
			must(t, c.draft(f))
			must(t, c.user(root))
			before := cmTree(t, root)
			statusBefore := cmStatus(t, d)
			res, err := d.Commit(CommitOptions{})
			if !errors.Is(err, ErrConflict) {
				t.Fatalf("commit: %v, want ErrConflict", err)
			}
			if len(res.Conflicts) != 1 || res.Conflicts[0].Reason == "" {
				t.Fatalf("conflicts %+v", res.Conflicts)
			}
			if got := cmTree(t, root); !equalMaps(got, before) {
				t.Fatalf("refused commit wrote to disk: %v -> %v", before, got)
			}
			if got := cmStatus(t, d); got != statusBefore {
				t.Fatalf("refused commit changed the draft: %q -> %q", statusBefore, got)
			}
			if c.want == nil {
				return
			}
			if _, err := d.Commit(CommitOptions{Force: true}); err != nil {
				t.Fatalf("forced commit: %v", err)
			}
			cmEqualTree(t, root, c.want)
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func TestCommitDryRunAndSelection(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"a": "a\n", "b": "b\n", "dir/c": "c\n"})
	must(t, afero.WriteFile(f, "a", []byte("A\n"), 0o644))
	must(t, afero.WriteFile(f, "b", []byte("B\n"), 0o644))
	must(t, f.Rename("dir/c", "moved-c"))
	res, err := d.Commit(CommitOptions{DryRun: true})
	if err != nil || len(res.Applied) != 3 {
		t.Fatalf("dry run: %+v %v", res, err)
	}
	cmEqualTree(t, root, map[string]string{"a": "a\n", "b": "b\n", "dir/c": "c\n"})
	// Selecting the rename's source takes the rename along.
	if _, err := d.Commit(CommitOptions{Keys: []string{"a", "dir/c"}}); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"a": "A\n", "b": "b\n", "dir/": "/", "moved-c": "c\n"})
	if got := cmStatus(t, d); got != "M b" {
		t.Fatalf("left in draft: %q", got)
	}
}

func TestUndoRefusedWhenDiskChanged(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"a": "a\n"})
	must(t, afero.WriteFile(f, "a", []byte("A\n"), 0o644))
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	cmWrite(t, root, map[string]string{"a": "user again\n"})
	if _, err := d.Undo(SourceCLI); !errors.Is(err, ErrDiskChanged) {
		t.Fatalf("undo: %v, want ErrDiskChanged", err)
	}
	cmEqualTree(t, root, map[string]string{"a": "user again\n"})
}

func TestUndoRefusedWhenDraftChangedAgain(t *testing.T) {
	_, d, f := cmSetup(t, map[string]string{"a": "a\n"})
	must(t, afero.WriteFile(f, "a", []byte("A\n"), 0o644))
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	must(t, afero.WriteFile(f, "a", []byte("AA\n"), 0o644))
	if _, err := d.Undo(SourceCLI); !errors.Is(err, ErrConflict) {
		t.Fatalf("undo: %v, want ErrConflict", err)
	}
}

func TestCommitKeepsModeAndChmods(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"run.sh": "#!/bin/sh\n", "dir/x": "x"})
	must(t, os.Chmod(filepath.Join(root, "run.sh"), 0o755))
	must(t, afero.WriteFile(f, "run.sh", []byte("#!/bin/sh\necho\n"), 0o644))
	must(t, f.Chmod("dir", 0o700))
	if got := cmStatus(t, d); got != "M dir/\nM run.sh" {
		t.Fatalf("status %q", got)
	}
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{"run.sh": 0o755, "dir": 0o700 | os.ModeDir} {
		fi, err := os.Stat(filepath.Join(root, p))
		if err != nil || fi.Mode() != want {
			t.Fatalf("%s: mode %v, want %v (%v)", p, fi.Mode(), want, err)
		}
	}
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(root, "dir")); fi.Mode().Perm() != 0o755 {
		t.Fatalf("undo left dir mode %v", fi.Mode())
	}
}

func TestCommitAgainstBuffer(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"f": tenLines})
	bufs := d.Workspace().Buffers()
	must(t, bufs.Open("f", 1, []byte("unsaved\n"+tenLines)))
	b, err := afero.ReadFile(f, "f")
	if err != nil || string(b) != "unsaved\n"+tenLines {
		t.Fatalf("merged view shows %q, want the buffer", b)
	}
	must(t, afero.WriteFile(f, "f", append(b, "agent\n"...), 0o644))
	if got := cmStatus(t, d); got != "M f" {
		t.Fatalf("status %q", got)
	}
	// The user types on: a clean merge with the buffer's text.
	if _, err := bufs.Replace("f", 2, []byte("unsaved\n"+strings.Replace(tenLines, "5\n", "five\n", 1))); err != nil {
		t.Fatal(err)
	}
	if got := cmStatus(t, d); got != "C f" {
		t.Fatalf("status after typing %q", got)
	}
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"f": "unsaved\n" + strings.Replace(tenLines, "5\n", "five\n", 1) + "agent\n"})
}

func TestDiscardAndLog(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"a": "a\n", "b": "b\n"})
	must(t, afero.WriteFile(f, "a", []byte("A\n"), 0o644))
	must(t, d.Fs(SourceMCP).Rename("b", "c"))
	dropped, err := d.Discard([]string{"c"}, SourceCLI)
	if err != nil || strings.Join(dropped, ",") != "b,c" {
		t.Fatalf("discard c: %v %v (the rename's source must come along)", dropped, err)
	}
	if got := cmStatus(t, d); got != "M a" {
		t.Fatalf("status %q", got)
	}
	if _, err := d.Discard(nil, SourceCLI); err != nil {
		t.Fatal(err)
	}
	if got := cmStatus(t, d); got != "" {
		t.Fatalf("status after discard all %q", got)
	}
	cmEqualTree(t, root, map[string]string{"a": "a\n", "b": "b\n"})
	log, err := d.Log()
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, l := range log {
		ops = append(ops, l.Op+":"+string(l.Source))
	}
	want := "write:cli,rename:mcp,discard:cli,discard:cli"
	if strings.Join(ops, ",") != want {
		t.Fatalf("log %v, want %s", ops, want)
	}
}

func TestDiffShowsUserSideToDraft(t *testing.T) {
	_, d, f := cmSetup(t, map[string]string{"a": "one\n", "bin": "\x00\x01", "old": "o\n"})
	must(t, afero.WriteFile(f, "a", []byte("two\n"), 0o644))
	must(t, afero.WriteFile(f, "bin", []byte("\x00\x02"), 0o644))
	must(t, f.Rename("old", "new"))
	must(t, afero.WriteFile(f, "added", []byte("x\n"), 0o644))
	diffs, err := d.Diff()
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, fd := range diffs {
		all.WriteString(fd.Patch)
	}
	want := `diff --git a/a b/a
--- a/a
+++ b/a
@@ -1 +1 @@
-one
+two
diff --git a/added b/added
new file mode 100644
--- /dev/null
+++ b/added
@@ -0,0 +1 @@
+x
diff --git a/bin b/bin
Binary files a/bin and b/bin differ
diff --git a/old b/new
rename from old
rename to new
`
	if all.String() != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", all.String(), want)
	}
}

func TestDiffOfFileInNewDirectory(t *testing.T) {
	_, d, f := cmSetup(t, map[string]string{"a": "a\n"})
	must(t, f.MkdirAll("newdir", 0o755))
	must(t, afero.WriteFile(f, "newdir/new.txt", []byte("n\n"), 0o644))
	diffs, err := d.Diff()
	if err != nil || len(diffs) != 1 {
		t.Fatalf("%+v %v", diffs, err)
	}
	want := "diff --git a/newdir/new.txt b/newdir/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/newdir/new.txt\n@@ -0,0 +1 @@\n+n\n"
	if diffs[0].Patch != want {
		t.Fatalf("patch:\n%s\nwant:\n%s", diffs[0].Patch, want)
	}
}
