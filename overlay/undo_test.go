//go:build linux

package overlay

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

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

// Undo whose draft files were all moved back before a crash, with the
// directory that kept them gone, finishes: nothing is left to move.
func TestUndoKeptFilesMovedBefore(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"old": "o\n"})
	for _, k := range []string{"a", "b", "c"} {
		must(t, afero.WriteFile(f, k, []byte(k+"\n"), 0o644))
	}
	res, err := d.Commit(CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := d.st.commit(res.ID)
	if err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(d.undoDir(res.ID), "data")
	for ino, n := range rec.Inode {
		if n.Data {
			must(t, os.Rename(filepath.Join(kept, fmt.Sprintf("%x", ino)), d.dataPath(dataName(ino))))
		}
	}
	must(t, os.Remove(kept))
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"old": "o\n"})
	for _, k := range []string{"a", "b", "c"} {
		if b, err := afero.ReadFile(f, k); err != nil || string(b) != k+"\n" {
			t.Errorf("%s in the draft after undo: %q %v", k, b, err)
		}
	}
}
