//go:build linux

package overlay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"
)

// Undo of a directory renamed and chmod'ed gives it back its old name
// and its old mode.
func TestUndoRenamedDirectoryMode(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"d/x": "x\n"})
	must(t, os.Chmod(filepath.Join(root, "d"), 0o755))
	must(t, f.Chmod("d", 0o700))
	must(t, f.Rename("d", "d2"))
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(root, "d2"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("d2 after the commit: %v %v, want 0700", fi, err)
	}
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	fi, err = os.Stat(filepath.Join(root, "d"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("d after the undo: %v %v, want 0755", fi, err)
	}
	cmEqualTree(t, root, map[string]string{"d/x": "x\n"})
}

// TestUndoneRecordSummary: an undone commit's record keeps its paths
// only: every later commit, undo and collection reads all the records,
// and decoding the ops and entries of a large undone commit each time
// cost them a tenth of their time.
func TestUndoneRecordSummary(t *testing.T) {
	_, d, f := cmSetup(t, nil)
	must(t, afero.WriteFile(f, "a", []byte("a\n"), 0o644))
	must(t, afero.WriteFile(f, "b", []byte("b\n"), 0o644))
	_, err := d.Commit(CommitOptions{})
	must(t, err)
	_, err = d.Undo(SourceCLI)
	must(t, err)
	recs, err := d.st.commits()
	must(t, err)
	if len(recs) != 1 {
		t.Fatalf("%d commit records, want 1", len(recs))
	}
	r := recs[0]
	if r.State != stateUndone || !slices.Equal(r.Paths, []string{"a", "b"}) || len(r.Ops) > 0 || len(r.Entry) > 0 || len(r.Inode) > 0 {
		t.Errorf("undone record: state %s, paths %v, %d ops, %d entries, %d inodes; want undone, [a b], no more",
			r.State, r.Paths, len(r.Ops), len(r.Entry), len(r.Inode))
	}
	if b, err := afero.ReadFile(f, "a"); err != nil || string(b) != "a\n" {
		t.Errorf("a reads %q, %v after the undo; want it back in the draft", b, err)
	}
}

// Commit and undo read no earlier commit record: the store keeps what
// they look at of each (commitHead). Undo decodes the one it undoes.
func TestCommitUndoDecodeNoEarlierRecord(t *testing.T) {
	_, d, f := cmSetup(t, map[string]string{"a": "a\n"})
	for i := range 3 {
		must(t, afero.WriteFile(f, "a", []byte{byte('0' + i)}, 0o644))
		if _, err := d.Commit(CommitOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var decoded []uint64
	testHookDecodeCommit = func(id uint64) { decoded = append(decoded, id) }
	defer func() { testHookDecodeCommit = nil }()
	must(t, afero.WriteFile(f, "b", []byte("b\n"), 0o644))
	res, err := d.Commit(CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(decoded) != 0 {
		t.Errorf("commit decoded records %v", decoded)
	}
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(decoded, []uint64{res.ID}) {
		t.Errorf("undo decoded records %v, want only %d", decoded, res.ID)
	}
}

// Undo killed once the disk was reverted and every draft file moved
// back (the directory that kept them gone too), before the draft was
// written, finishes at the next open: nothing is left to move. One
// file was linked into place by the commit, one kept for undo (a
// writer had it open).
func TestUndoKeptFilesMovedBefore(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"old": "o\n"})
	for _, k := range []string{"a", "b"} {
		must(t, afero.WriteFile(f, k, []byte(k+"\n"), 0o644))
	}
	open, err := f.OpenFile("b", os.O_WRONLY, 0)
	must(t, err)
	res, err := d.Commit(CommitOptions{})
	must(t, err)
	must(t, open.Close()) // b stays in the draft, as the commit left it
	rec, err := d.st.commit(res.ID)
	must(t, err)
	linked := 0
	kept := filepath.Join(d.undoDir(res.ID), "data")
	for _, op := range rec.Ops {
		from := filepath.Join(kept, keepName(op.Ino))
		if op.Link {
			linked++
			from = filepath.Join(root, op.Path)
		}
		must(t, os.Rename(from, d.dataPath(dataName(op.Ino))))
	}
	if linked != 1 {
		t.Fatalf("%d of the commit's ops linked their file, want 1 (a)", linked)
	}
	must(t, os.Remove(kept))
	rec.State = stateUndoing
	must(t, d.st.write(&txn{commits: map[uint64]*commitRecord{rec.ID: rec}}))
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"old": "o\n"})
	for _, k := range []string{"a", "b"} {
		if b, err := afero.ReadFile(f, k); err != nil || string(b) != k+"\n" {
			t.Errorf("%s in the draft after undo: %q %v", k, b, err)
		}
	}
}

// TestUndoRefusesRemovedParent: undo puts the commit's changes back in
// the draft; when the draft removed or replaced a parent of one since,
// that change would sit below a name that is no directory, so undo
// refuses and says which. It used to go ahead.
func TestUndoRefusesRemovedParent(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"d/x": "x\n", "e/y": "y\n"})
	must(t, afero.WriteFile(f, "d/x", []byte("X\n"), 0o644))
	must(t, afero.WriteFile(f, "e/y", []byte("Y\n"), 0o644))
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	must(t, f.RemoveAll("d"))
	must(t, f.RemoveAll("e"))
	must(t, afero.WriteFile(f, "e", []byte("file\n"), 0o644))
	_, err := d.Undo(SourceCLI)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "changed d, e again") {
		t.Fatalf("undo: %v, want a conflict naming d and e", err)
	}
	cmEqualTree(t, root, map[string]string{"d/x": "X\n", "e/y": "Y\n"})
	if _, err := f.Stat("d/x"); !os.IsNotExist(err) {
		t.Errorf("d/x in the view: %v, want none", err)
	}
}

// TestUndoPutsFifoBack: an undo that puts a FIFO back where the commit
// made a directory opens neither it (syncing the directories it
// changed) nor, listing the draft's directory there again, does the
// view: an open of a FIFO waits for a writer. Both used to hang.
func TestUndoPutsFifoBack(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"x": "x\n"})
	must(t, syscall.Mkfifo(filepath.Join(root, "p"), 0o644))
	must(t, f.Remove("p"))
	must(t, f.Mkdir("p", 0o755))
	must(t, f.Mkdir("p/q", 0o755))
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := d.Undo(SourceCLI)
		if err == nil {
			var names []string
			if names, err = readDirNames(f, "p"); err == nil && !slices.Equal(names, []string{"q"}) {
				err = fmt.Errorf("p lists %q, want q", names)
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(time.Minute):
		t.Fatal("undo and the listing of p still waiting after a minute")
	}
	if fi, err := os.Lstat(filepath.Join(root, "p")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("p on disk after the undo: %v %v, want the FIFO", fi, err)
	}
}

// readDirNames lists a directory of the view.
func readDirNames(f *Fs, p string) ([]string, error) {
	dir, err := f.Open(p)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

// TestUndoRefusesChangeBelowMoved: a file the draft changed below a
// directory the commit renamed is based on the disk's file there, which
// the undo would move back: undo refuses and names it. It used to go
// ahead, and the next commit saw the file as deleted by the user.
func TestUndoRefusesChangeBelowMoved(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"g/f": "f\n"})
	must(t, f.Rename("g", "b"))
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	must(t, afero.WriteFile(f, "b/f", []byte("F\n"), 0o644))
	_, err := d.Undo(SourceCLI)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "changed b/f again") {
		t.Fatalf("undo: %v, want a conflict naming b/f", err)
	}
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"b/f": "F\n"})
}

// TestUndoNestedRenames: a directory moved out of its parent, the parent
// moved into another directory and removed there, and that one moved
// in over an empty directory of the first (mv f c/c; mv c/c/f f;
// mv c f/a; rmdir f/a/c). The commit's copy of the old f for undo held
// f/f too, so the undo put the copy back first and then could not move
// f/f itself back ("directory not empty"), leaving the disk half
// reverted.
func TestUndoNestedRenames(t *testing.T) {
	disk := map[string]string{"c/z": "z\n", "f/a/": "", "f/f/a/": "", "f/f/x": "x\n"}
	root, d, f := cmSetup(t, disk)
	must(t, f.Rename("f", "c/c"))
	must(t, f.Remove("c/c/a"))
	must(t, f.Rename("c/c/f", "f"))
	must(t, f.Rename("c", "f/a"))
	must(t, f.Remove("f/a/c"))
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"f/a/z": "z\n", "f/x": "x\n"})
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, disk)
}

// TestUndoCopyNotTakenForDiskFile: a file copied up (the copy keeps the
// disk file's number), moved, committed, the rest of the draft
// discarded, and the commit undone: the copy is back in the draft under
// its new name, and the disk file, never changed, is at the old one.
// The view took the disk file for the copy, and read the copy there
// (and a handle opened there wrote into it).
func TestUndoCopyNotTakenForDiskFile(t *testing.T) {
	_, d, f := cmSetup(t, map[string]string{"b/a": "A\n"})
	must(t, afero.WriteFile(f, "b/a", []byte("X\n"), 0o644))
	must(t, f.Rename("b/a", "a"))
	if _, err := d.Commit(CommitOptions{Keys: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Discard(nil, SourceCLI); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	check := func(want map[string]string) {
		t.Helper()
		for p, w := range want {
			if b, err := afero.ReadFile(f, p); err != nil || string(b) != w {
				t.Errorf("%s in the view: %q %v, want %q", p, b, err, w)
			}
		}
	}
	check(map[string]string{"a": "X\n", "b/a": "A\n"})
	// A write through a handle opened on the disk file copies it up
	// anew; it used to write into the copy at a.
	h, err := f.OpenFile("b/a", os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = h.Write([]byte("more\n"))
	must(t, err)
	must(t, h.Close())
	check(map[string]string{"a": "X\n", "b/a": "A\nmore\n"})
}

// TestUndoRenumbersTakenInode: a copy-up keeps the disk file's number;
// when the draft copied the same disk file up again after the commit
// (mv c b; commit b; discard; truncate c), the undo puts the commit's
// copy back under a new number. It took the old one back: its data
// file replaced the new copy's, and b and c became one file.
func TestUndoRenumbersTakenInode(t *testing.T) {
	_, d, f := cmSetup(t, map[string]string{"b": "b\n", "c": "cc\n"})
	h, err := f.OpenFile("c", os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = h.Write([]byte("+\n"))
	must(t, err)
	must(t, h.Close())
	must(t, f.Rename("c", "b"))
	if _, err := d.Commit(CommitOptions{Keys: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Discard(nil, SourceCLI); err != nil {
		t.Fatal(err)
	}
	must(t, f.Truncate("c", 1))
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"b": "cc\n+\n", "c": "c"} {
		if b, err := afero.ReadFile(f, p); err != nil || string(b) != want {
			t.Errorf("%s in the view: %q %v, want %q", p, b, err, want)
		}
	}
	bi, _ := f.Stat("b")
	ci, _ := f.Stat("c")
	if bi != nil && ci != nil && bi.Sys().(*Attr).Ino == ci.Sys().(*Attr).Ino {
		t.Errorf("b and c are one inode, %d", ci.Sys().(*Attr).Ino)
	}
}

// TestUndoKeepsKeptInode: the undo of a hunk commit puts the file back
// as the same inode the rest of its change stayed in (its number is in
// use by that inode, not by another copy), so the path keeps its inode
// number across the undo.
func TestUndoKeepsKeptInode(t *testing.T) {
	_, d, f := cmSetup(t, map[string]string{"x": hunkBase})
	hkWrite(t, f, "x", strings.Replace(strings.Replace(hunkBase, "b\n", "B\n", 1), "o\n", "O\n", 1))
	hs := hunksOf(t, d, "x")
	if _, err := d.Commit(CommitOptions{Hunks: []string{hs[0].ID}}); err != nil {
		t.Fatal(err)
	}
	before, err := f.Stat("x")
	must(t, err)
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	after, err := f.Stat("x")
	must(t, err)
	if b, a := before.Sys().(*Attr).Ino, after.Sys().(*Attr).Ino; b != a {
		t.Errorf("x's inode number: %d before the undo, %d after", b, a)
	}
}
