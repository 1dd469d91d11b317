//go:build linux

package overlay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"
)

// cmSetup makes a workspace on disk holding files (a value ending in "/"
// makes a directory; "->target" a symlink) and opens its main draft.
func cmSetup(t testing.TB, files map[string]string) (string, *Draft, *Fs) {
	t.Helper()
	root := t.TempDir()
	cmWrite(t, root, files)
	w, err := Open(Options{Root: root, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	d, err := w.Draft("")
	if err != nil {
		t.Fatal(err)
	}
	return root, d, d.Fs(SourceCLI)
}

func cmWrite(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		switch {
		case strings.HasSuffix(p, "/"):
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(c, "->") {
			if err := os.Symlink(c[2:], full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// cmTree reads a directory tree: files as content, dirs as "/",
// symlinks as "->target"; draftfs's own temp names must never remain.
func cmTree(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if strings.Contains(rel, ".draftfs-") {
			t.Errorf("commit left %s behind", rel)
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			tg, _ := os.Readlink(p)
			out[rel] = "->" + tg
		case fi.IsDir():
			out[rel+"/"] = "/"
		default:
			b, _ := os.ReadFile(p)
			out[rel] = string(b)
		}
		return nil
	})
	return out
}

func cmEqualTree(t testing.TB, root string, want map[string]string) {
	t.Helper()
	got := cmTree(t, root)
	want = withParents(want)
	for k, v := range want {
		if strings.HasSuffix(k, "/") {
			v = "/"
		}
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected on disk", k)
		}
	}
}

// withParents adds the directories that hold the given paths.
func withParents(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
		for p := parentOf(strings.TrimSuffix(k, "/")); p != ""; p = parentOf(p) {
			out[p+"/"] = "/"
		}
	}
	return out
}

func cmStatus(t testing.TB, d *Draft) string {
	t.Helper()
	st, err := d.Status()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, s := range st {
		l := s.Letter() + " " + s.Path
		if s.From != "" {
			l = s.Letter() + " " + s.From + " -> " + s.Path
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCommitMatrix commits each kind of change, checks disk and draft,
// then undoes it and checks both are back.
func TestCommitMatrix(t *testing.T) {
	initial := map[string]string{
		"a.txt": "alpha\n", "b.txt": "beta\n", "dir/": "", "dir/x": "x\n",
		"dir/sub/y": "y\n", "link": "->a.txt", "keep/k": "k\n",
	}
	cases := []struct {
		name   string
		do     func(t *testing.T, f *Fs)
		status string
		after  map[string]string // changes to initial after commit ("-" deletes)
	}{
		{"modify", func(t *testing.T, f *Fs) {
			must(t, afero.WriteFile(f, "a.txt", []byte("ALPHA\n"), 0o644))
		}, "M a.txt", map[string]string{"a.txt": "ALPHA\n"}},
		{"add nested", func(t *testing.T, f *Fs) {
			must(t, f.MkdirAll("new/deep", 0o755))
			must(t, afero.WriteFile(f, "new/deep/n.txt", []byte("n\n"), 0o644))
		}, "A new/deep/n.txt", map[string]string{"new/": "", "new/deep/": "", "new/deep/n.txt": "n\n"}},
		{"delete", func(t *testing.T, f *Fs) {
			must(t, f.Remove("b.txt"))
		}, "D b.txt", map[string]string{"b.txt": "-"}},
		{"delete tree", func(t *testing.T, f *Fs) {
			must(t, f.RemoveAll("dir"))
		}, "D dir", map[string]string{"dir/": "-", "dir/x": "-", "dir/sub/y": "-"}},
		{"rename file", func(t *testing.T, f *Fs) {
			must(t, f.Rename("a.txt", "c.txt"))
		}, "R a.txt -> c.txt", map[string]string{"a.txt": "-", "c.txt": "alpha\n"}},
		{"rename dir with edit", func(t *testing.T, f *Fs) {
			must(t, f.Rename("dir", "moved"))
			must(t, afero.WriteFile(f, "moved/sub/y", []byte("Y\n"), 0o644))
		}, "R dir/ -> moved/\nM moved/sub/y", map[string]string{"dir/": "-", "dir/x": "-", "dir/sub/y": "-",
			"moved/": "", "moved/x": "x\n", "moved/sub/y": "Y\n"}},
		{"swap", func(t *testing.T, f *Fs) {
			must(t, f.Rename2("a.txt", "b.txt", RenameExchange))
		}, "R b.txt -> a.txt\nR a.txt -> b.txt", map[string]string{"a.txt": "beta\n", "b.txt": "alpha\n"}},
		{"atomic save over", func(t *testing.T, f *Fs) {
			must(t, afero.WriteFile(f, ".a.txt.swp", []byte("saved\n"), 0o644))
			must(t, f.Rename(".a.txt.swp", "a.txt"))
		}, "M a.txt", map[string]string{"a.txt": "saved\n"}},
		{"rm -rf and mkdir", func(t *testing.T, f *Fs) {
			must(t, f.RemoveAll("dir"))
			must(t, f.Mkdir("dir", 0o755))
			must(t, afero.WriteFile(f, "dir/fresh", []byte("f\n"), 0o644))
		}, "M dir/\nA dir/fresh", map[string]string{"dir/x": "-", "dir/sub/y": "-", "dir/fresh": "f\n"}},
		{"file over dir", func(t *testing.T, f *Fs) {
			must(t, f.RemoveAll("dir"))
			must(t, afero.WriteFile(f, "dir", []byte("now a file\n"), 0o644))
		}, "M dir", map[string]string{"dir/": "-", "dir/x": "-", "dir/sub/y": "-", "dir": "now a file\n"}},
		{"symlink", func(t *testing.T, f *Fs) {
			must(t, f.Remove("link"))
			must(t, f.Symlink("b.txt", "link"))
			must(t, f.Symlink("dir/x", "l2"))
		}, "A l2\nM link", map[string]string{"link": "->b.txt", "l2": "->dir/x"}},
		{"hard link", func(t *testing.T, f *Fs) {
			must(t, f.Link("a.txt", "hard"))
			must(t, afero.WriteFile(f, "hard", []byte("both\n"), 0o644))
		}, "M a.txt\nA hard", map[string]string{"a.txt": "both\n", "hard": "both\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, d, f := cmSetup(t, initial)
			c.do(t, f)
			if got := cmStatus(t, d); got != c.status {
				t.Fatalf("status:\n%s\nwant:\n%s", got, c.status)
			}
			cmEqualTree(t, root, initial) // nothing on disk before commit
			res, err := d.Commit(CommitOptions{Source: SourceCLI})
			if err != nil {
				t.Fatalf("commit: %v (%+v)", err, res)
			}
			want := map[string]string{}
			for k, v := range initial {
				want[k] = v
			}
			for k, v := range c.after {
				if v == "-" {
					delete(want, k)
					continue
				}
				want[k] = v
			}
			cmEqualTree(t, root, want)
			if got := cmStatus(t, d); got != "" {
				t.Fatalf("draft not empty after commit:\n%s", got)
			}
			if _, err := d.Undo(SourceCLI); err != nil {
				t.Fatalf("undo: %v", err)
			}
			cmEqualTree(t, root, initial)
			if got := cmStatus(t, d); got != c.status {
				t.Fatalf("status after undo:\n%s\nwant:\n%s", got, c.status)
			}
			if _, err := d.Undo(SourceCLI); !errors.Is(err, ErrNothingToUndo) {
				t.Fatalf("second undo: %v, want ErrNothingToUndo", err)
			}
		})
	}
}

// TestCommitWhileOpenForWriting: writes through a handle that stays open
// across a commit are not lost: the file stays in the draft.
func TestCommitWhileOpenForWriting(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"log": ""})
	h, err := f.OpenFile("log", os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = h.Write([]byte("one\n"))
	must(t, err)
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"log": "one\n"})
	_, err = h.Write([]byte("two\n"))
	must(t, err)
	must(t, h.Close())
	if b, _ := afero.ReadFile(f, "log"); string(b) != "one\ntwo\n" {
		t.Fatalf("merged view %q", b)
	}
	if got := cmStatus(t, d); got != "M log" {
		t.Fatalf("status %q", got)
	}
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"log": "one\ntwo\n"})
}

// TestCommitUndoAllocate: a daemon that holds the kernel's nodes of a
// large tree runs near its memory limit, where every megabyte a commit
// or undo allocates costs collections. Both once made a 32 KiB copy
// buffer for each file.
func TestCommitUndoAllocate(t *testing.T) {
	if raceBuild {
		t.Skip("-race allocates on its own")
	}
	_, d, f := cmSetup(t, nil)
	const n = 300
	for i := range 3 {
		must(t, f.Mkdir(fmt.Sprintf("new%d", i), 0o755))
	}
	for i := range n {
		must(t, afero.WriteFile(f, fmt.Sprintf("new%d/f%03d", i%3, i), []byte("new\n"), 0o644))
	}
	perFile := func(what string, run func() error) {
		t.Helper()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := run(); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 16<<10 {
			t.Errorf("%s of %d files allocated %d bytes per file", what, n, per)
		}
	}
	perFile("commit", func() error { _, err := d.Commit(CommitOptions{}); return err })
	perFile("undo", func() error { _, err := d.Undo(SourceCLI); return err })
}

// TestCommitModesExact: what a commit writes has the draft's mode
// exactly, whatever the umask takes from a new file's.
func TestCommitModesExact(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"old": "o\n"})
	modes := map[string]fs.FileMode{"old": 0o666, "a": 0o644, "b": 0o755, "c": 0o777, "d": 0o600, "e": 0o640}
	for k, m := range modes {
		must(t, afero.WriteFile(f, k, []byte(k), 0o600))
		must(t, f.Chmod(k, m))
	}
	old := syscall.Umask(0o077)
	_, err := d.Commit(CommitOptions{})
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	for k, m := range modes {
		if fi, err := os.Lstat(filepath.Join(root, k)); err != nil || fi.Mode() != m {
			t.Errorf("%s: %v %v, want %v", k, fi.Mode(), err, m)
		}
	}
}

// TestCommitRecordWrittenTwice: a commit with no renames of the disk's
// objects (no phase A) writes its record when prepared and when done,
// not once more in between: a record of 10,000 ops is megabytes.
func TestCommitRecordWrittenTwice(t *testing.T) {
	_, d, f := cmSetup(t, map[string]string{"a": "a\n"})
	for i := range 20 {
		must(t, afero.WriteFile(f, fmt.Sprintf("n%02d", i), []byte("n\n"), 0o644))
	}
	must(t, afero.WriteFile(f, "a", []byte("A\n"), 0o644))
	d.st.mu.Lock()
	before := d.st.seq
	d.st.mu.Unlock()
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	d.st.mu.Lock()
	n := d.st.seq - before
	d.st.mu.Unlock()
	if n != 2 {
		t.Errorf("the commit wrote %d records to the draft's log, want 2", n)
	}
}

// TestCommitRenamedBackOverAnother: an object renamed over another and
// back where it was is no change of its own; the commit removes the
// other and leaves the object where it is. It used to move the object
// aside to place it back, skip placing it (no change), and drop it with
// the commit's staging directory.
func TestCommitRenamedBackOverAnother(t *testing.T) {
	for _, c := range []struct{ name, from, to string }{
		{"file", "d0/a", "d1/b"},
		{"symlink", "d0/l", "d1/b"},
		{"directory", "d0/dir", "d1/empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			disk := map[string]string{"d0/a": "A\n", "d0/l": "->a", "d0/dir/in": "in\n", "d1/b": "B\n", "d1/empty/": "", "d1/keep": "k\n"}
			root, d, f := cmSetup(t, disk)
			must(t, f.Rename(c.from, c.to))
			must(t, f.Rename(c.to, c.from))
			if _, err := d.Commit(CommitOptions{}); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			for k, v := range disk {
				if k != c.to && k != c.to+"/" {
					want[k] = v
				}
			}
			cmEqualTree(t, root, want)
		})
	}
}

// TestCommitNothingKeepsWriter: a commit of entries that change nothing
// (a file opened for writing and not yet written, a touch) drops them,
// except a file still open for writing: what is written next stays in
// the draft. It used to go to an inode no path named.
func TestCommitNothingKeepsWriter(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"a": "a\n", "b": "b\n"})
	h, err := f.OpenFile("a", os.O_RDWR|os.O_APPEND, 0)
	must(t, err)
	defer h.Close()
	must(t, f.Chtimes("b", time.Unix(1, 0), time.Unix(1, 0)))
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Write([]byte("more\n")); err != nil {
		t.Fatal(err)
	}
	if b, err := afero.ReadFile(f, "a"); err != nil || string(b) != "a\nmore\n" {
		t.Errorf("the view has a = %q %v, want what the handle wrote after the commit", b, err)
	}
	cmEqualTree(t, root, map[string]string{"a": "a\n", "b": "b\n"})
}

// TestCommitLinkOverDirectory: a hard link the draft made where the disk
// has a directory (removed in the draft) replaces it, as a file does.
func TestCommitLinkOverDirectory(t *testing.T) {
	// z sorts after n: n is written, z linked to it.
	root, d, f := cmSetup(t, map[string]string{"z/a": "a\n", "x": "x\n"})
	must(t, f.RemoveAll("z"))
	must(t, afero.WriteFile(f, "n", []byte("n\n"), 0o644))
	must(t, f.Link("n", "z"))
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"z": "n\n", "n": "n\n", "x": "x\n"})
	assertLinked(t, root, "z", "n")
}

// TestCommitLinkToUnchanged: a hard link to a file the draft did not
// change is committed as a link to the file on disk, as the view had
// it, not as a copy.
func TestCommitLinkToUnchanged(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"a": "a\n"})
	must(t, f.Link("a", "b"))
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"a": "a\n", "b": "a\n"})
	assertLinked(t, root, "a", "b")
}

// assertLinked fails unless the disk's a and b are one file.
func assertLinked(t *testing.T, root, a, b string) {
	t.Helper()
	fa, erra := os.Lstat(filepath.Join(root, a))
	fb, errb := os.Lstat(filepath.Join(root, b))
	if erra != nil || errb != nil || !os.SameFile(fa, fb) {
		t.Errorf("%s and %s are not one file on disk (%v, %v)", a, b, erra, errb)
	}
}

// TestCommitRemadeWhereMovedFrom: an object renamed away and made again
// at its old path as it was (mv g b; ln -s f.txt g) leaves two, though
// the new one alone changes nothing. The commit used to skip the new
// one and move the old one away: one was lost.
func TestCommitRemadeWhereMovedFrom(t *testing.T) {
	for _, c := range []struct{ name, old string }{{"symlink", "->f.txt"}, {"file", "g\n"}} {
		t.Run(c.name, func(t *testing.T) {
			root, d, f := cmSetup(t, map[string]string{"g": c.old, "f.txt": "f\n"})
			must(t, f.Rename("g", "b"))
			if c.name == "symlink" {
				must(t, f.Symlink("f.txt", "g"))
			} else {
				must(t, afero.WriteFile(f, "g", []byte(c.old), 0o644))
			}
			if _, err := d.Commit(CommitOptions{}); err != nil {
				t.Fatal(err)
			}
			cmEqualTree(t, root, map[string]string{"g": c.old, "b": c.old, "f.txt": "f\n"})
		})
	}
}

// TestCommitRenamedBackBelowMovedDirectory: a file renamed away and back
// below a renamed directory changes nothing (the directory's move takes
// it along), also where the file's name is another's on disk (the two
// directories exchanged). The commit panicked planning it: no staging,
// no inode to write.
func TestCommitRenamedBackBelowMovedDirectory(t *testing.T) {
	t.Run("rename", func(t *testing.T) {
		root, d, f := cmSetup(t, map[string]string{"a/g": "g\n"})
		must(t, f.Rename("a", "b"))
		must(t, f.Rename("b/g", "b/h"))
		must(t, f.Rename("b/h", "b/g"))
		if _, err := d.Commit(CommitOptions{}); err != nil {
			t.Fatal(err)
		}
		cmEqualTree(t, root, map[string]string{"b/": "", "b/g": "g\n"})
	})
	t.Run("exchange", func(t *testing.T) {
		root, d, f := cmSetup(t, map[string]string{"a/g": "a\n", "c/g/g": "c\n"})
		must(t, f.Rename2("a", "c/g", RenameExchange))
		must(t, f.Rename("c/g/g", "c/g/h"))
		must(t, f.Rename("c/g/h", "c/g/g"))
		if _, err := d.Commit(CommitOptions{}); err != nil {
			t.Fatal(err)
		}
		cmEqualTree(t, root, map[string]string{"a/": "", "a/g": "c\n", "c/": "", "c/g/": "", "c/g/g": "a\n"})
	})
}

// TestCommitPartTakesWhatRenamesRead: committing one path of the draft
// takes along the renames that read the disk objects the commit moves or
// replaces: the other half of an exchange (mv --exchange g b; commit
// b/g), and a rename out of a directory the commit moves (mv o/sub y;
// mv o x; commit x/k). Committed alone, the other one's view lost its
// object.
func TestCommitPartTakesWhatRenamesRead(t *testing.T) {
	t.Run("exchange", func(t *testing.T) {
		root, d, f := cmSetup(t, map[string]string{"g/g": "g\n", "b/f": "f\n"})
		must(t, f.Rename2("g", "b", RenameExchange))
		must(t, afero.WriteFile(f, "b/g", []byte("G\n"), 0o644))
		// b/g alone: b comes as its parent, g as b's other half.
		if _, err := d.Commit(CommitOptions{Keys: []string{"b/g"}}); err != nil {
			t.Fatal(err)
		}
		cmEqualTree(t, root, map[string]string{"b/g": "G\n", "g/f": "f\n"})
		draftHas(t, f, map[string]string{"g/f": "f\n"})
	})
	t.Run("out of a moved directory", func(t *testing.T) {
		root, d, f := cmSetup(t, map[string]string{"o/sub": "s\n", "o/k": "k\n"})
		must(t, f.Rename("o/sub", "y"))
		must(t, f.Rename("o", "x"))
		must(t, afero.WriteFile(f, "x/k", []byte("K\n"), 0o644))
		if _, err := d.Commit(CommitOptions{Keys: []string{"x/k"}}); err != nil {
			t.Fatal(err)
		}
		cmEqualTree(t, root, map[string]string{"x/k": "K\n", "y": "s\n"})
		draftHas(t, f, map[string]string{"y": "s\n"})
	})
}

// TestCommitRewritesWhatACopyMovedFrom: a file copied up (the copy keeps
// the disk file's number), moved away with a writer still open on it,
// and its path given an object the same as the disk's file, which the
// commit leaves as it is: the view took that file for the copy kept for
// the writer, and the path read what the handle wrote elsewhere (see
// copyAtOpen).
func TestCommitRewritesWhatACopyMovedFrom(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"g": "", "b": "b\n", "c/g": "cg\n"})
	h, err := f.OpenFile("g", os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	defer h.Close()
	_, err = h.Write([]byte("via handle\n"))
	must(t, err)
	must(t, f.Rename2("c/g", "g", RenameExchange))
	must(t, afero.WriteFile(f, "b", nil, 0o644))
	must(t, f.Rename("b", "g"))
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"g": "", "c/g": "via handle\n"})
	if b, err := afero.ReadFile(f, "g"); err != nil || len(b) != 0 {
		t.Errorf("g in the view after the commit: %q %v, want it empty", b, err)
	}
}

// TestCommitRenameTakesRemovalAbove: committing a file renamed out of a
// directory the draft then removed (mv a/c b; rm -r a; commit b) takes
// that removal along, as status shows the rename. The commit used to
// write b and leave a/c on disk.
func TestCommitRenameTakesRemovalAbove(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"a/c": "c\n", "a/d": "d\n", "x": "x\n"})
	must(t, f.Rename("a/c", "b"))
	h, err := f.OpenFile("b", os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = h.Write([]byte("more\n"))
	must(t, err)
	must(t, h.Close())
	must(t, f.RemoveAll("a"))
	if _, err := d.Commit(CommitOptions{Keys: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"b": "c\nmore\n", "x": "x\n"})
}

// TestCommitRenameTakesDirectoryRenamedOver: the same where a directory
// was renamed over the source's directory (mv b/g c/a; mv a b; write
// c/a; commit c/a): that rename replaces the directory the source is in,
// so it comes along. The commit used to write c/a and leave b/g on disk.
func TestCommitRenameTakesDirectoryRenamedOver(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"a/f.txt": "af\n", "b/g": "bg\n", "c/a": "ca\n", "x": "x\n"})
	must(t, f.Rename("b/g", "c/a"))
	must(t, f.Rename("a", "b"))
	must(t, afero.WriteFile(f, "c/a", []byte("changed\n"), 0o644))
	if _, err := d.Commit(CommitOptions{Keys: []string{"c/a"}}); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"b/": "", "b/f.txt": "af\n", "c/": "", "c/a": "changed\n", "x": "x\n"})
}

// TestCommitBelowMovedOverSymlink: a path below a directory the commit
// moves in over one whose child is a symlink on disk (mv --exchange b
// c, where c/g is a symlink and b/g a directory; then c/g/new) commits:
// the commit puts the moved directory there first, so nothing goes
// through the symlink. It was refused as a path below a symlink.
func TestCommitBelowMovedOverSymlink(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"b/g/x": "x\n", "c/g": "->../b", "k": "k\n"})
	must(t, f.Rename2("b", "c", RenameExchange))
	must(t, afero.WriteFile(f, "c/g/new", []byte("n\n"), 0o644))
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"c/g/x": "x\n", "c/g/new": "n\n", "b/g": "->../b", "k": "k\n"})
}
