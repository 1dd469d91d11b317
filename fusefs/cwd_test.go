//go:build linux

package fusefs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/draftfs/draftfs/overlay"
)

// TestWorkingDirectoryKept: a process whose working directory is in the
// mount keeps it when that directory, or one above it, changes on disk,
// and when the change feed overflows (the disk watch's first walk ends
// with one). Dropping the kernel's entry of a directory unhashes it, and
// getcwd there then failed with ENOENT.
func TestWorkingDirectoryKept(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"sub/deeper/f.txt": "x\n"}, watch: true})
	dir := filepath.Join(m.mnt, "sub", "deeper")
	// A directory unhashed in the kernel shows as "DIR (deleted)" in
	// /proc/PID/cwd. Nothing may look the directory up again before the
	// check: the lookup would give the kernel's entry back.
	r := startLoop(t, dir, "readlink /proc/self/cwd")
	pwd := func(after string) {
		t.Helper()
		if got := strings.TrimSpace(r.read(t, "")); got != dir {
			t.Fatalf("after %s: the working directory in %s is %q", after, dir, got)
		}
	}
	pwd("cd")
	sub := m.ws.Subscribe()
	defer sub.Close()
	for _, c := range []struct {
		rel  string
		mode os.FileMode
	}{{"sub/deeper", 0o700}, {"sub", 0o750}, {"sub/deeper", 0o755}} {
		if err := os.Chmod(filepath.Join(m.root, c.rel), c.mode); err != nil {
			t.Fatal(err)
		}
		waitDiskChange(t, sub, c.rel)
		settle(t, m)
		pwd("chmod " + c.rel + " on disk")
	}
	m.srv.cache.All()
	pwd("a feed overflow")
}

// TestWorkingDirectoryKeptAcrossCommit: a directory the draft made
// gets the disk's inode number when committed, and a draft one again
// when the commit is undone; a process working in it keeps its working
// directory and the directory's files by their names, also once the
// disk watch reported the commit's mkdir and the parent was listed (a
// listing that gave the directory a new node would drop its entry).
func TestWorkingDirectoryKeptAcrossCommit(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"a.txt": "a\n"}, watch: true})
	dir := filepath.Join(m.mnt, "made", "deeper")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("draft\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startLoop(t, dir, "readlink /proc/self/cwd; cat f.txt")
	check := func(after string) {
		t.Helper()
		if got, want := strings.TrimSpace(r.read(t, "")), dir+"\ndraft"; got != want {
			t.Fatalf("after %s: the working directory and its f.txt read %q, want %q", after, got, want)
		}
	}
	list := func() {
		t.Helper()
		for _, d := range []string{m.mnt, filepath.Dir(dir), dir} {
			if _, err := os.ReadDir(d); err != nil {
				t.Fatal(err)
			}
		}
	}
	check("mkdir")
	sub := m.ws.Subscribe()
	defer sub.Close()
	if _, err := m.d.Commit(overlay.CommitOptions{Source: overlay.SourceCLI}); err != nil {
		t.Fatal(err)
	}
	waitDiskChange(t, sub, "made")
	settle(t, m)
	check("commit")
	// The watch's event of the commit's mkdir may also come after the
	// commit was applied.
	late := func(after string) {
		t.Helper()
		for _, p := range []string{"made", "made/deeper"} {
			m.srv.cache.Apply(overlay.Change{Kind: overlay.ChangeDisk, Path: p, Source: overlay.SourceDisk})
		}
		m.srv.cache.Flush()
		check(after)
	}
	late("commit and a late disk event")
	list()
	check("commit and listings")
	if _, err := m.d.Undo(overlay.SourceCLI); err != nil {
		t.Fatal(err)
	}
	waitDiskChange(t, sub, "made")
	settle(t, m)
	check("undo")
	late("undo and a late disk event")
	list()
	check("undo and listings")
}

// waitDiskChange waits until the feed brings a disk change of rel.
func waitDiskChange(t *testing.T, sub *overlay.Subscription, rel string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case c := <-sub.C:
			if c.Kind == overlay.ChangeDisk && c.Path == rel {
				return
			}
		case <-deadline:
			t.Fatalf("no disk change of %s on the feed within 10 s", rel)
		}
	}
}
