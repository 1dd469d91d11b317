//go:build linux

package overlay

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/spf13/afero"
)

// The state stays bounded however many commits a draft sees: undo data
// of the last UndoKeep commits and the bases still referred to, no more.
func TestStateBoundedAfterManyCommits(t *testing.T) {
	commits := 1000
	if n, err := strconv.Atoi(os.Getenv("DRAFTFS_GC_COMMITS")); err == nil {
		commits = n
	} else if testing.Short() {
		commits = 100
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		// A tmpfs: the commits' fsyncs cost nothing there, and the
		// test measures space, not the disk.
		t.Setenv("TMPDIR", "/dev/shm")
	}
	_, d, f := cmSetup(t, map[string]string{"big": "x"})
	content := make([]byte, 1<<20)
	for i := range content {
		content[i] = byte(i * 7)
	}
	for i := range commits {
		copy(content, strconv.Itoa(i)+"\n")
		must(t, afero.WriteFile(f, "big", content, 0o644))
		if _, err := d.Commit(CommitOptions{}); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	// Per commit kept: the disk file it overwrote, the draft's content
	// it took (for undo) and its base blob, 1 MiB each; and slack for
	// the database.
	limit := int64(UndoKeep+2)*(3<<20) + 8<<20
	size := dirSize(d.dir)
	t.Logf("state after %d commits of a 1 MiB file: %s (limit %s)", commits, FormatSize(size), FormatSize(limit))
	if size > limit {
		t.Fatalf("state holds %s after %d commits of a 1 MiB file, want at most %s", FormatSize(size), commits, FormatSize(limit))
	}
	// The kept commits undo, in order, and then undo says why it stops.
	for i := range UndoKeep {
		if _, err := d.Undo(SourceCLI); err != nil {
			t.Fatalf("undo %d: %v", i, err)
		}
		must(t, afero.WriteFile(f, "big", []byte("x"), 0o644)) // keeps later undo from conflicting
		if _, err := d.Discard(nil, SourceCLI); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Undo(SourceCLI); !errors.Is(err, ErrNothingToUndo) {
		t.Fatalf("undo beyond the kept commits: %v, want ErrNothingToUndo", err)
	}
	res, err := d.GC(true)
	if err != nil || res.Freed != 0 || res.Size == 0 {
		t.Fatalf("gc --dry-run after the automatic collections: %+v, %v; want nothing left to free", res, err)
	}
}
