//go:build linux

package overlay

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

// fsImmutableFl is FS_IMMUTABLE_FL, which x/sys/unix lacks.
const fsImmutableFl = 0x10

// immutable sets or clears the immutable flag of path (chattr +i/-i).
func immutable(t *testing.T, path string, on bool) {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		t.Skipf("no inode flags here: %v", err)
	}
	if on {
		flags |= fsImmutableFl
	} else {
		flags &^= fsImmutableFl
	}
	if err := unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags)); err != nil {
		if on {
			t.Skipf("cannot make %s immutable: %v", path, err)
		}
		t.Fatalf("clear the immutable flag of %s: %v", path, err)
	}
}

// failingCommit makes a draft over initial with change, then has commit
// fail partway through broken (which makes the disk refuse), and checks
// that the commit rolled back: the disk and the draft as before, the
// error saying what failed. Then mend lets it succeed, and a reopened
// draft and undo work.
func failingCommit(t *testing.T, root, state string, initial map[string]string, change func(f *Fs), broken, mend func(), wantErr string) {
	t.Helper()
	cmWrite(t, root, initial)
	w, err := Open(Options{Root: root, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	d, err := w.Draft("")
	if err != nil {
		t.Fatal(err)
	}
	f := d.Fs(SourceCLI)
	change(f)
	view := crashView(t, f)
	status := cmStatus(t, d)
	broken()
	_, err = d.Commit(CommitOptions{})
	if err == nil || !strings.Contains(err.Error(), wantErr) || !strings.Contains(err.Error(), "rolled back") {
		mend()
		t.Fatalf("commit on a disk that refuses: %v; want an error with %q that says it rolled back", err, wantErr)
	}
	mend()
	cmEqualTree(t, root, initial)
	if got := cmStatus(t, d); got != status {
		t.Fatalf("draft after the failed commit:\n%s\nwant\n%s", got, status)
	}
	if got := crashView(t, f); !equalMaps(got, view) {
		t.Fatalf("merged view after the failed commit: %v, want %v", keys(got), keys(view))
	}
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatalf("commit once the disk takes it: %v", err)
	}
	cmEqualTree(t, root, view)
	w.Close()
	w, err = Open(Options{Root: root, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if d, err = w.Draft(""); err != nil {
		t.Fatalf("reopen after a failed and a good commit: %v", err)
	}
	if got := cmStatus(t, d); got != "" {
		t.Fatalf("draft after reopening: %s", got)
	}
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, initial)
}

func TestCommitFailingOnImmutableDirRollsBack(t *testing.T) {
	root := t.TempDir()
	z := filepath.Join(root, "z")
	t.Cleanup(func() {
		if _, err := os.Stat(z); err == nil {
			immutable(t, z, false)
		}
	})
	failingCommit(t, root, t.TempDir(),
		map[string]string{"a/1": "one\n", "z/old": "old\n", "m/keep": "k\n"},
		func(f *Fs) {
			fd, err := f.OpenFile("a/1", os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			_, err = fd.Write([]byte("two\n"))
			must(t, err)
			must(t, fd.Close())
			must(t, afero.WriteFile(f, "z/new", []byte("new\n"), 0o644))
			must(t, f.Rename("a/1", "a/1-renamed"))
			must(t, f.Rename("m", "m2"))
			must(t, f.Remove("z/old"))
		},
		func() { immutable(t, z, true) },
		func() { immutable(t, z, false) },
		"operation not permitted")
}

func TestCommitFailingOnFullDiskRollsBack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	// Batches of 3 writes: the write that fails comes while the batch
	// before is synced, not yet renamed.
	for _, batch := range []int{writeBatch, 3} {
		t.Run(fmt.Sprintf("batch%d", batch), func(t *testing.T) {
			withWriteBatch(t, batch)
			root := t.TempDir()
			if err := syscall.Mount("tmpfs", root, "tmpfs", 0, "size=2m"); err != nil {
				t.Skipf("cannot mount a tmpfs: %v", err)
			}
			t.Cleanup(func() { syscall.Unmount(root, syscall.MNT_DETACH) })
			filler := filepath.Join(root, ".filler")
			initial := map[string]string{"a/1": "one\n", "a/keep": "k\n", "b/2": "two\n"}
			failingCommit(t, root, t.TempDir(), initial,
				func(f *Fs) {
					must(t, f.MkdirAll("new", 0o755))
					for i := range 20 {
						must(t, afero.WriteFile(f, fmt.Sprintf("new/%02d", i), []byte(strings.Repeat("n", 64<<10)), 0o644))
					}
					must(t, f.Rename("a/1", "new/1-renamed"))
					must(t, afero.WriteFile(f, "b/2", []byte("changed\n"), 0o644))
				},
				func() {
					// Room for a few of the new files only.
					must(t, os.WriteFile(filler, make([]byte, 1500<<10), 0o600))
				},
				func() { os.Remove(filler) },
				"no space left")
		})
	}
}

// withWriteBatch has commits share a sync among n writes for the test.
func withWriteBatch(t *testing.T, n int) {
	old := writeBatch
	writeBatch = n
	t.Cleanup(func() { writeBatch = old })
}
