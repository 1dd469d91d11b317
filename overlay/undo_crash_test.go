//go:build linux

package overlay

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
)

// undoWorker opens the state, says READY, and on a line from stdin
// undoes the last commit and says DONE.
func undoWorker(d *Draft) {
	fmt.Println("READY")
	bufio.NewScanner(os.Stdin).Scan()
	if _, err := d.Undo(SourceCLI); err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Println("DONE")
}

// TestUndoKilledIsFinished kills an undo of a commit of many changes at
// a random moment, many times, and checks that the next open finished
// it (the disk as before the commit, the changes back in the draft) or
// that it had not begun (the disk as committed, the draft empty, and
// undo then works): never half of it.
func TestUndoKilledIsFinished(t *testing.T) {
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	onTmpfs(t)
	r, seed := killSeed(t)
	initial := map[string]string{}
	for i := range 200 {
		initial[fmt.Sprintf("d%d/f%03d", i%5, i)] = fmt.Sprintf("v0 %d\n", i)
	}
	var full time.Duration // an undo run to the end, in the first round
	outcomes := map[string]int{}
	for round := 0; round < rounds; round++ {
		root, state := t.TempDir(), t.TempDir()
		cmWrite(t, root, initial)
		w, err := Open(Options{Root: root, StateDir: state})
		if err != nil {
			t.Fatal(err)
		}
		d, _ := w.Draft("")
		f := d.Fs(SourceMount)
		for k, v := range initial {
			must(t, afero.WriteFile(f, k, []byte(v+"agent\n"), 0o644))
		}
		must(t, f.Rename("d1", "moved"))
		must(t, f.Chmod("d2", 0o700))
		must(t, f.Remove("d3/f003"))
		must(t, afero.WriteFile(f, "d4/new", []byte("new\n"), 0o644))
		committed := crashView(t, f)
		if _, err := d.Commit(CommitOptions{}); err != nil {
			t.Fatal(err)
		}
		w.Close()

		wk := startWorker(t, "undo", root, state)
		if full = wk.interrupt(r, full); round == 0 {
			t.Logf("an undo of %d changes takes %v", len(committed), full)
		}

		w, d = reopenAfterKill(t, root, state, fmt.Sprintf("round %d (seed %d)", round, seed))
		onDisk := cmTree(t, root)
		if strings.Join(keys(onDisk), ",") == strings.Join(keys(withParents(initial)), ",") && cmStatus(t, d) != "" {
			outcomes["finished"]++
		} else {
			if st := cmStatus(t, d); st != "" {
				w.Close()
				t.Fatalf("round %d (seed %d): the disk is neither as before nor as committed, draft:\n%s", round, seed, st)
			}
			cmEqualTree(t, root, committed)
			if t.Failed() {
				t.Fatalf("round %d (seed %d): undo neither finished nor left undone", round, seed)
			}
			if _, err := d.Undo(SourceCLI); err != nil {
				t.Fatalf("round %d (seed %d): undo after a kill before it began: %v", round, seed, err)
			}
			outcomes["not begun"]++
		}
		cmEqualTree(t, root, initial)
		if got := crashView(t, d.Fs(SourceCLI)); !equalMaps(got, committed) {
			t.Fatalf("round %d (seed %d): the merged view after the undo lost changes: %d paths, want %d", round, seed, len(got), len(committed))
		}
		fi, err := os.Stat(filepath.Join(root, "d2"))
		if err != nil || fi.Mode().Perm() != 0o755 {
			t.Fatalf("round %d: d2 after undo: %v %v", round, fi, err)
		}
		if m, _ := filepath.Glob(filepath.Join(root, ".draftfs-*")); len(m) > 0 {
			t.Fatalf("round %d: left on disk: %v", round, m)
		}
		w.Close()
	}
	t.Logf("outcomes: %v", outcomes)
}
