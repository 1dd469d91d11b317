//go:build linux

package overlay

import (
	"os"
	"path/filepath"
	"testing"
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
