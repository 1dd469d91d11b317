//go:build linux

package overlay

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/spf13/afero"
)

// TestReadsDuringCommit: while a commit writes to the disk, lookups,
// reads and listings of the draft go on (they used to wait for the whole
// commit), show the draft as it was (no temp files of the commit), and a
// change made meanwhile waits for the commit and is kept in the draft.
func TestReadsDuringCommit(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"old": "old\n", "dir/keep": "k\n"})
	names := []string{"f00"}
	for i := range 20 {
		k := fmt.Sprintf("dir/f%02d", i)
		must(t, f.MkdirAll("dir", 0o755))
		must(t, afero.WriteFile(f, k, []byte(k+"\n"), 0o644))
		if i > 0 {
			names = append(names, fmt.Sprintf("f%02d", i))
		}
	}
	names = append(names, "keep")
	must(t, afero.WriteFile(f, "old", []byte("new\n"), 0o644))
	// A hang guard only: a read that waits for the commit never returns
	// while the hook holds the commit.
	const hang = 2 * time.Minute
	checked, later := false, make(chan error, 1)
	testHookOp = func(i int) error {
		if i != 10 || checked {
			return nil
		}
		checked = true
		done := make(chan error, 1)
		go func() {
			if _, err := f.Stat("dir/f03"); err != nil {
				done <- err
				return
			}
			b, err := afero.ReadFile(f, "old")
			if err == nil && string(b) != "new\n" {
				err = fmt.Errorf("old reads %q during the commit", b)
			}
			if err != nil {
				done <- err
				return
			}
			ents, err := afero.ReadDir(f, "dir")
			var got []string
			for _, e := range ents {
				got = append(got, e.Name())
			}
			if err == nil && !reflect.DeepEqual(got, names) {
				err = fmt.Errorf("dir lists %q during the commit, want %q", got, names)
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(hang):
			t.Error("a read waited for the commit's disk writes")
		}
		go func() { later <- afero.WriteFile(f, "later", []byte("later\n"), 0o644) }()
		return nil
	}
	defer func() { testHookOp = nil }()
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if !checked {
		t.Fatal("the commit never reached op 10")
	}
	if err := <-later; err != nil {
		t.Fatal(err)
	}
	testHookOp = nil
	checkStatus(t, d, []StatusEntry{{Path: "later", Change: StatusAdded}})
	want := map[string]string{"old": "new\n", "dir/keep": "k\n"}
	for _, n := range names[:20] {
		want["dir/"+n] = "dir/" + n + "\n"
	}
	cmEqualTree(t, root, want)
}
