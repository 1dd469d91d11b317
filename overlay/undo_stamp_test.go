//go:build linux

package overlay

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// stampSetup commits a modified file and two new ones, the commit taking
// racyWindow longer before it is done (as a large one does), and counts
// the files undo reads back from then on.
func stampSetup(t *testing.T) (root string, d *Draft, read *[]string) {
	root, d, f := cmSetup(t, map[string]string{"a": "old a\n"})
	must(t, f.MkdirAll("n", 0o755))
	for k, v := range map[string]string{"a": "new a\n", "n/x": "x1\n", "n/y": "y1\n"} {
		fh, err := f.Create(k)
		must(t, err)
		_, err = fh.Write([]byte(v))
		must(t, err)
		must(t, fh.Close())
	}
	testHookStamped = func() { time.Sleep(racyWindow + 20*time.Millisecond) }
	_, err := d.Commit(CommitOptions{})
	testHookStamped = nil
	must(t, err)
	read = new([]string)
	testHookDiskHash = func(key string) { *read = append(*read, key) }
	t.Cleanup(func() { testHookDiskHash = nil })
	return root, d, read
}

// rewriteKeepingStat gives a file new content of the same size and puts
// its mtime back: only the ctime tells.
func rewriteKeepingStat(t *testing.T, path, content string) {
	fi, err := os.Stat(path)
	must(t, err)
	must(t, os.WriteFile(path, []byte(content), 0o644))
	must(t, os.Chtimes(path, fi.ModTime(), fi.ModTime()))
}

// Undo tells the committed files unchanged from their stamps, without
// reading them back.
func TestUndoStampsSpareReads(t *testing.T) {
	root, d, read := stampSetup(t)
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	if len(*read) != 0 {
		t.Errorf("undo read back %v: their stamps tell they are as committed", *read)
	}
	cmEqualTree(t, root, map[string]string{"a": "old a\n"})
}

// A file changed since the commit is seen, even with its size and mtime
// put back, and undo refuses.
func TestUndoStampsSeeChanges(t *testing.T) {
	root, d, read := stampSetup(t)
	rewriteKeepingStat(t, filepath.Join(root, "n/x"), "x2\n")
	_, err := d.Undo(SourceCLI)
	if !errors.Is(err, ErrDiskChanged) {
		t.Fatalf("undo over a changed n/x: %v, want ErrDiskChanged", err)
	}
	if len(*read) != 1 || (*read)[0] != "n/x" {
		t.Errorf("undo read back %v, want [n/x] alone", *read)
	}
}

// A commit record of an earlier version, without stamps, is checked by
// reading the files back, and undone.
func TestUndoRecordWithoutStamps(t *testing.T) {
	root, d, read := stampSetup(t)
	recs, err := d.st.commits()
	must(t, err)
	rec := recs[len(recs)-1]
	for i := range rec.Ops {
		rec.Ops[i].Stat = nil
	}
	rec.Stamped = 0
	must(t, d.st.write(&txn{reserved: true, commits: map[uint64]*commitRecord{rec.ID: rec}}))
	rewriteKeepingStat(t, filepath.Join(root, "n/x"), "x2\n")
	if _, err := d.Undo(SourceCLI); !errors.Is(err, ErrDiskChanged) {
		t.Fatalf("undo over a changed n/x: %v, want ErrDiskChanged", err)
	}
	rewriteKeepingStat(t, filepath.Join(root, "n/x"), "x1\n")
	*read = nil
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	sort.Strings(*read)
	if len(*read) != 3 {
		t.Errorf("undo of a record without stamps read back %v, want the 3 files", *read)
	}
	cmEqualTree(t, root, map[string]string{"a": "old a\n"})
}
