//go:build linux

package overlay

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/spf13/afero"
)

// TestRecoverInterruptedCommit stops a commit before each of its ops in
// turn, as a crash would, and checks that reopening the state finishes
// it: the disk ends exactly as after an uninterrupted commit.
func TestRecoverInterruptedCommit(t *testing.T) {
	// Batches of 2 writes too: a crash comes while the batch before is
	// synced, not yet renamed.
	for _, batch := range []int{writeBatch, 2} {
		t.Run(fmt.Sprintf("batch%d", batch), func(t *testing.T) {
			withWriteBatch(t, batch)
			recoverInterruptedCommit(t)
		})
	}
}

func recoverInterruptedCommit(t *testing.T) {
	initial := map[string]string{"a": "a\n", "b": "b\n", "dir/x": "x\n", "dir/sub/y": "y\n", "gone/z": "z\n"}
	change := func(f *Fs) {
		must(t, afero.WriteFile(f, "a", []byte("A\n"), 0o644))
		must(t, f.Rename2("a", "b", RenameExchange))
		must(t, f.Rename("dir", "moved"))
		must(t, afero.WriteFile(f, "moved/sub/y", []byte("Y\n"), 0o644))
		must(t, f.RemoveAll("gone"))
		must(t, f.MkdirAll("new/deep", 0o755))
		must(t, afero.WriteFile(f, "new/deep/n", []byte("n\n"), 0o644))
	}
	want := map[string]string{"a": "b\n", "b": "A\n", "moved/x": "x\n", "moved/sub/y": "Y\n", "new/deep/n": "n\n"}
	ops := 0
	testHookOp = func(i int) error { ops++; return nil }
	{
		root, d, f := cmSetup(t, initial)
		change(f)
		if _, err := d.Commit(CommitOptions{}); err != nil {
			t.Fatal(err)
		}
		cmEqualTree(t, root, want)
	}
	defer func() { testHookOp = nil }()
	t.Logf("%d crash points", ops)
	errCrash := errors.New("simulated crash")
	for stop := 0; stop < ops; stop++ {
		root, d, f := cmSetup(t, initial)
		change(f)
		testHookOp = func(i int) error {
			if i == stop {
				return errCrash
			}
			return nil
		}
		if _, err := d.Commit(CommitOptions{}); !errors.Is(err, errCrash) {
			t.Fatalf("stop %d: commit: %v", stop, err)
		}
		testHookOp = nil
		state := d.dir
		d.w.Close()
		w, err := Open(Options{Root: root, StateDir: stateRoot(state)})
		if err != nil {
			t.Fatalf("stop %d: reopen: %v", stop, err)
		}
		d2, err := w.Draft("")
		if err != nil {
			t.Fatalf("stop %d: reopen draft: %v", stop, err)
		}
		cmEqualTree(t, root, want)
		if got := cmStatus(t, d2); got != "" {
			t.Fatalf("stop %d: draft after recovery:\n%s", stop, got)
		}
		if _, err := d2.Undo(SourceCLI); err != nil {
			t.Fatalf("stop %d: undo after recovery: %v", stop, err)
		}
		cmEqualTree(t, root, initial)
		w.Close()
	}
}

// stateRoot is the workspace state directory a draft's directory is in.
func stateRoot(draftDir string) string {
	return parentOf(parentOf(draftDir))
}

// TestRemoveFileWithLostData: a draft file whose data file went behind
// the engine's back (a damaged state directory) can still be listed,
// removed and renamed: what these need to know of a
// draft file is in its records, and the lost content is not asked for.
func TestRemoveFileWithLostData(t *testing.T) {
	root := t.TempDir()
	w, err := Open(Options{Root: root, StateDir: t.TempDir()})
	must(t, err)
	defer w.Close()
	d, _ := w.Draft("")
	f := d.Fs(SourceMount)
	for _, name := range []string{"lost.txt", "lost2.txt"} {
		must(t, afero.WriteFile(f, name, []byte(name), 0o644))
	}
	for _, name := range []string{"lost.txt", "lost2.txt"} {
		d.mu.RLock()
		ino := d.entries[name].Ino
		path := d.dataPath(d.inodes[ino].dataName(ino))
		d.mu.RUnlock()
		must(t, os.Remove(path))
		if _, err := f.Stat(name); err == nil {
			t.Fatalf("%s is described with its data file gone", name)
		}
	}
	// A listing still names it, and says what it is where that is
	// enough (a mount's listing of a file the kernel knows).
	ents, err := f.ReadDir("/")
	must(t, err)
	listed := false
	for _, de := range ents {
		if de.Name() != "lost.txt" {
			continue
		}
		listed = true
		if _, err := de.Info(); err == nil {
			t.Error("lost.txt's listing entry is described with its data file gone")
		}
		fi, err := de.(*dirEntry).InfoMeta()
		if err != nil || fi.Name() != "lost.txt" || fi.Mode() != 0o644 || fi.Sys().(*Attr).Ino == 0 {
			t.Errorf("InfoMeta of lost.txt: %v, %v", fi, err)
		}
	}
	if !listed {
		t.Error("lost.txt is not listed")
	}
	must(t, f.Remove("lost.txt"))
	must(t, f.Rename("lost2.txt", "moved.txt"))
	must(t, f.Remove("moved.txt"))
	for _, name := range []string{"lost.txt", "lost2.txt", "moved.txt"} {
		if _, err := f.Stat(name); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s at the end: %v", name, err)
		}
	}
}
