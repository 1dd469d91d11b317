//go:build linux

package overlay

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/afero"
)

// rollbackWorker opens the state and commits; the commit fails partway
// (the test made a directory immutable), and the worker kills itself
// with SIGKILL before the rollback reverts its op number
// DRAFTFS_ROLLBACK_KILL (counted from the first reverted).
func rollbackWorker(d *Draft) {
	kill, _ := strconv.Atoi(os.Getenv("DRAFTFS_ROLLBACK_KILL"))
	reverted := 0
	testHookRevert = func(int) {
		if reverted == kill {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		reverted++
	}
	_, err := d.Commit(CommitOptions{})
	fmt.Printf("COMMIT %d %v\n", reverted, err)
}

// TestCommitRollbackKilled: a commit that fails partway rolls back
// before it returns; killed (SIGKILL) at any point of that rollback, the
// next start finishes it: the disk as before the commit, the draft and
// its merged view as before, and a commit then works.
func TestCommitRollbackKilled(t *testing.T) {
	initial := map[string]string{"z/old": "old\n", "m/keep": "k\n"}
	for i := range 40 {
		initial[fmt.Sprintf("a%d/f%02d", i%4, i)] = fmt.Sprintf("v0 %d\n", i)
	}
	total := -1 // ops the rollback reverts, learnt in the first round
	for round := 0; total < 0 || round <= 8; round++ {
		root, state := t.TempDir(), t.TempDir()
		z := filepath.Join(root, "z")
		cmWrite(t, root, initial)
		w, err := Open(Options{Root: root, StateDir: state})
		if err != nil {
			t.Fatal(err)
		}
		d, _ := w.Draft("")
		f := d.Fs(SourceCLI)
		for k, v := range initial {
			if strings.HasPrefix(k, "a") {
				must(t, afero.WriteFile(f, k, []byte(v+"agent\n"), 0o644))
			}
		}
		must(t, f.Rename("a1/f01", "a1/f01-renamed"))
		must(t, f.Rename("m", "m2"))
		must(t, f.Chmod("a2", 0o700))
		must(t, f.Remove("a3/f03"))
		must(t, afero.WriteFile(f, "z/new", []byte("new\n"), 0o644)) // the op that fails
		view, status := crashView(t, f), cmStatus(t, d)
		w.Close()

		// Kill points spread over the rollback; the first round runs
		// to the end and counts its ops.
		kill := 1 << 30
		if total >= 0 {
			kill = round * (total + 1) / 9
		}
		immutable(t, z, true)
		wk := startWorker(t, "rollback", root, state, fmt.Sprintf("DRAFTFS_ROLLBACK_KILL=%d", kill))
		out := wk.line()
		killed, err := wk.wait()
		immutable(t, z, false)
		if err != nil {
			t.Fatalf("round %d: worker: %v %s", round, err, out)
		}
		if !killed {
			var n int
			var msg string
			if _, err := fmt.Sscanf(out, "COMMIT %d %s", &n, &msg); err != nil || !strings.Contains(out, "rolled back") {
				t.Fatalf("round %d: the commit did not fail and roll back: %s", round, out)
			}
			if total < 0 {
				total = n
				t.Logf("the rollback reverts %d ops", total)
			}
		}

		w, d = reopenAfterKill(t, root, state, fmt.Sprintf("round %d (killed at revert %d)", round, kill))
		cmEqualTree(t, root, initial)
		if fi, err := os.Stat(filepath.Join(root, "a2")); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("round %d: a2 after the rollback: %v %v", round, fi, err)
		}
		if got := cmStatus(t, d); got != status {
			t.Fatalf("round %d (killed at revert %d): draft after the rollback:\n%s\nwant\n%s", round, kill, got, status)
		}
		if got := crashView(t, d.Fs(SourceCLI)); !equalMaps(got, view) {
			t.Fatalf("round %d (killed at revert %d): merged view after the rollback: %v, want %v", round, kill, keys(got), keys(view))
		}
		if m, _ := filepath.Glob(filepath.Join(root, ".draftfs-*")); len(m) > 0 {
			t.Fatalf("round %d: left on disk: %v", round, m)
		}
		if _, err := d.Commit(CommitOptions{}); err != nil {
			t.Fatalf("round %d: commit after the rollback: %v", round, err)
		}
		cmEqualTree(t, root, view)
		w.Close()
		if t.Failed() {
			t.Fatalf("round %d (killed at revert %d) failed", round, kill)
		}
	}
}
