//go:build linux

package overlay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
)

// TestNoopChanges: a draft entry whose type, mode and content equal what
// the user has (or had when the agent started) is no change for status,
// diff or commit, which writes nothing and drops it.
func TestNoopChanges(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{
		"touched": "t\n", "same": "s\n", "back": "b\n", "mode": "m\n", "gone": "g\n",
		"both": "old\n", "real": "r\n", "x": "x\n", "owned": "o\n",
	})
	later := time.Now().Add(time.Hour)
	must(t, f.Chtimes("touched", later, later))
	must(t, afero.WriteFile(f, "same", []byte("s\n"), 0o644)) // a sed -i that matched nothing
	must(t, afero.WriteFile(f, "back", []byte("changed\n"), 0o644))
	must(t, afero.WriteFile(f, "back", []byte("b\n"), 0o644)) // a checkout back to the same content
	must(t, f.Chmod("mode", 0o600))
	must(t, f.Chmod("mode", 0o644))
	must(t, f.Remove("gone"))
	must(t, os.Remove(filepath.Join(root, "gone"))) // the user deleted it too
	must(t, afero.WriteFile(f, "both", []byte("new\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "both"), []byte("new\n"), 0o644)) // the user made the same change
	must(t, afero.WriteFile(f, "real", []byte("R\n"), 0o644))
	must(t, f.Chmod("x", 0o755))
	must(t, f.Chown("owned", os.Getuid()+1, os.Getgid()))

	st, err := d.Status()
	must(t, err)
	var got []string
	for _, s := range st {
		got = append(got, s.Letter()+" "+s.Path)
	}
	if strings.Join(got, ",") != "M owned,M real,M x" {
		t.Errorf("status: %v, want only M owned, M real, M x", got)
	}
	diffs, err := d.Diff()
	must(t, err)
	if len(diffs) != 3 || diffs[1].Path != "real" || diffs[2].Path != "x" {
		t.Errorf("diff: %+v, want owned, real and x", diffs)
	}
	fi, err := os.Stat(filepath.Join(root, "touched"))
	must(t, err)
	mtime := fi.ModTime()
	// owned's new owner is committed only when asked (see meta.go).
	res, err := d.Commit(CommitOptions{AllowOwner: true})
	must(t, err)
	if len(res.Applied) != 3 || len(res.Conflicts) != 0 {
		t.Errorf("commit: %+v, want 3 applied, no conflicts", res)
	}
	if fi, err := os.Stat(filepath.Join(root, "touched")); err != nil || !fi.ModTime().Equal(mtime) {
		t.Errorf("commit rewrote an unchanged file: %v %v", fi, err)
	}
	if entries := entryKeys(d); len(entries) != 0 {
		t.Errorf("after commit the draft still has %v", entries)
	}
	var ops []string
	log, err := d.Log()
	must(t, err)
	for _, l := range log {
		ops = append(ops, l.Op+" "+l.Path)
	}
	if !strings.Contains(strings.Join(ops, ","), "chown owned") || strings.Contains(strings.Join(ops, ","), "chmod owned") {
		t.Errorf("log: %v, want the chown logged as chown", ops)
	}
}

// TestNoopOnlyCommit: a commit of a draft that changes nothing writes
// nothing and empties the draft.
func TestNoopOnlyCommit(t *testing.T) {
	_, d, f := cmSetup(t, map[string]string{"a": "a\n"})
	must(t, afero.WriteFile(f, "a", []byte("a\n"), 0o644))
	res, err := d.Commit(CommitOptions{})
	must(t, err)
	if len(res.Applied) != 0 || res.ID != 0 {
		t.Errorf("commit: %+v, want nothing applied", res)
	}
	if entries := entryKeys(d); len(entries) != 0 {
		t.Errorf("the draft still has %v", entries)
	}
}

// entryKeys lists the draft's entries, changes or not.
func entryKeys(d *Draft) []string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return sortedKeys(d.entries)
}
