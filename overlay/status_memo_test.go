//go:build linux

package overlay

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

// TestStatusMemoSeesDiskChanges: status answered from the memo is exact
// after the disk and the draft's data files change behind the engine.
func TestStatusMemoSeesDiskChanges(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"a": "one\n", "b": "two\n", "c": "three\n", "e": "five\n", "g": "gee\n", "x/": ""})
	for k, v := range map[string]string{"a": "ONE\n", "b": "TWO\n", "c": "THREE\n", "e": "FIVE\n", "g": "GEE\n", "x/n": "new\n"} {
		must(t, afero.WriteFile(f, k, []byte(v), 0o644))
	}
	time.Sleep(racyWindow) // so that the answers are kept
	want := []StatusEntry{{Path: "a", Change: StatusModified}, {Path: "b", Change: StatusModified},
		{Path: "c", Change: StatusModified}, {Path: "e", Change: StatusModified},
		{Path: "g", Change: StatusModified}, {Path: "x/n", Change: StatusAdded}}
	for range 2 {
		checkStatus(t, d, want)
	}
	if len(d.memo.answers) == 0 {
		t.Fatal("nothing kept in the memo")
	}

	disk := func(k string) string { return filepath.Join(root, k) }
	must(t, os.WriteFile(disk("a"), []byte("ONE\n"), 0o644)) // the same change: no longer one
	must(t, os.Chmod(disk("b"), 0o600))
	must(t, os.WriteFile(disk("c"), []byte("seven\n"), 0o644)) // the user's edit: a conflict
	must(t, os.WriteFile(disk("x/n"), []byte("new\n"), 0o644)) // made on disk too
	// The draft's data file written behind the engine (as the kernel does
	// in passthrough mode), back to the base.
	d.mu.RLock()
	ino := d.entries["e"].Ino
	d.mu.RUnlock()
	must(t, os.WriteFile(d.dataPath(d.inodes[ino].dataName(ino)), []byte("five\n"), 0o600))
	// A user attribute set on the disk only: g no longer equals the disk
	// once its content does.
	must(t, os.WriteFile(disk("g"), []byte("GEE\n"), 0o644))
	time.Sleep(racyWindow) // past the window, the memo is consulted
	checkStatus(t, d, []StatusEntry{{Path: "b", Change: StatusModified, OldMode: "100600", NewMode: "100644"},
		{Path: "c", Change: StatusModified, Conflict: true}})
	if err := unix.Setxattr(disk("g"), "user.draftfs-test", []byte("v"), 0); err != nil {
		t.Skipf("no user xattrs here: %v", err)
	}
	time.Sleep(racyWindow)
	checkStatus(t, d, []StatusEntry{{Path: "b", Change: StatusModified, OldMode: "100600", NewMode: "100644"},
		{Path: "c", Change: StatusModified, Conflict: true}, {Path: "g", Change: StatusModified, Conflict: true}})
}

// TestStatusMemoKeepsNothingRacy: an answer about an object changed
// within racyWindow of its stat is not kept, since a change right after
// could leave its ctime as it was.
func TestStatusMemoKeepsNothingRacy(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"a": "one\n"})
	must(t, afero.WriteFile(f, "a", []byte("ONE\n"), 0o644))
	for range 20 {
		t0 := time.Now()
		must(t, os.WriteFile(filepath.Join(root, "a"), []byte("two\n"), 0o644))
		d.memo = memo{}
		if _, err := d.Status(); err != nil {
			t.Fatal(err)
		}
		if time.Since(t0) >= racyWindow {
			continue // too slow to tell (a loaded machine): again
		}
		if n := len(d.memo.answers); n != 0 {
			t.Fatalf("%d answers kept about a file changed just now", n)
		}
		return
	}
	t.Skip("the machine never ran a status within racyWindow of a write")
}

func checkStatus(t *testing.T, d *Draft, want []StatusEntry) {
	t.Helper()
	got, err := d.Status()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("status:\n got %+v\nwant %+v", got, want)
	}
}

// TestStatusMemoAllocates: a status answered from the memo allocates
// next to nothing per entry beyond the entry it returns: a daemon that
// holds 100,000 nodes for the kernel runs close to its memory limit,
// where each status's garbage cost a collection of the whole heap.
func TestStatusMemoAllocates(t *testing.T) {
	if raceBuild {
		t.Skip("-race allocates on its own")
	}
	_, d, f := cmSetup(t, map[string]string{"d/": ""})
	const n = 500
	for i := range n {
		must(t, afero.WriteFile(f, fmt.Sprintf("d/f%03d", i), []byte("new\n"), 0o644))
	}
	time.Sleep(racyWindow) // so that the answers are kept
	st, err := d.Status()
	if err != nil || len(st) != n {
		t.Fatalf("%d entries, %v", len(st), err)
	}
	allocs := testing.AllocsPerRun(3, func() {
		if _, err := d.Status(); err != nil {
			t.Fatal(err)
		}
	})
	// Was 2.1 per entry: a stamp and a list of paths of its own for
	// each. What is left is the name fstatat takes as bytes.
	if per := allocs / n; per > 1.5 {
		t.Errorf("a status of %d entries from the memo: %.0f allocations, %.2f per entry", n, allocs, per)
	}
}

// TestStatusMemoConcurrent: statuses at once (two editors' plugins, an
// agent) share the memo: each keeps answers while the others read
// them.
func TestStatusMemoConcurrent(t *testing.T) {
	files := map[string]string{}
	for i := range 50 {
		files[fmt.Sprintf("f%02d", i)] = "old\n"
	}
	_, d, f := cmSetup(t, files)
	for k := range files {
		must(t, afero.WriteFile(f, k, []byte("new\n"), 0o644))
	}
	time.Sleep(racyWindow) // so that the answers are kept
	done := make(chan error)
	for range 4 {
		go func() {
			var err error
			for range 20 {
				var st []StatusEntry
				if st, err = d.Status(); err == nil && len(st) != len(files) {
					err = fmt.Errorf("%d entries, want %d", len(st), len(files))
				}
				if err != nil {
					break
				}
				d.memo.mu.Lock()
				clear(d.memo.answers) // answers kept anew, some beside readers
				d.memo.mu.Unlock()
			}
			done <- err
		}()
	}
	for range 4 {
		must(t, <-done)
	}
}
