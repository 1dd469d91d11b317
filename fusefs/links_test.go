//go:build linux

package fusefs

import (
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/fusefs/internal/nodes"
)

// TestDirLinksThroughMount: a directory's link count is 2 and one per
// subdirectory of the merged view, as on a local disk (pjdfstest's
// rename/24.t), however the draft made, removed or moved them.
func TestDirLinksThroughMount(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"l/a/": "", "l/b/x/": "", "l/f": "f", "top/": ""}})
	// Every directory of the mount against a count of its listing.
	check := func(step string) {
		t.Helper()
		filepath.WalkDir(m.mnt, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				t.Fatalf("%s: walk: %v", step, err)
			}
			if !de.IsDir() {
				return nil
			}
			ents, err := os.ReadDir(p)
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			want := uint64(2)
			for _, e := range ents {
				if e.IsDir() {
					want++
				}
			}
			if got := lstat(t, p).Nlink; got != want {
				rel, _ := filepath.Rel(m.mnt, p)
				t.Errorf("%s: %q has %d links, want %d", step, rel, got, want)
			}
			return nil
		})
	}
	check("lower tree")
	l := filepath.Join(m.mnt, "l")
	steps := []struct {
		name string
		op   func() error
	}{
		{"mkdir in a disk directory", func() error { return os.Mkdir(filepath.Join(l, "c"), 0o755) }},
		{"rmdir of a disk subdirectory", func() error { return os.Remove(filepath.Join(l, "a")) }},
		{"mkdir of a new directory", func() error { return os.Mkdir(filepath.Join(m.mnt, "n"), 0o755) }},
		{"mkdir in a new directory", func() error { return os.Mkdir(filepath.Join(m.mnt, "n", "s"), 0o755) }},
		{"rename a disk directory into a new one", func() error { return os.Rename(filepath.Join(l, "b"), filepath.Join(m.mnt, "n", "b")) }},
		{"rename a new directory into a disk one", func() error { return os.Rename(filepath.Join(m.mnt, "n", "s"), filepath.Join(m.mnt, "top", "s")) }},
		{"rename a directory over an empty one", func() error { return unix.Rename(filepath.Join(l, "c"), filepath.Join(m.mnt, "top", "s")) }},
		{"a file over nothing", func() error { return os.Rename(filepath.Join(l, "f"), filepath.Join(m.mnt, "top", "f")) }},
		{"chmod of a disk directory", func() error { return os.Chmod(filepath.Join(m.mnt, "top"), 0o700) }},
		{"mkdir in a changed disk directory", func() error { return os.Mkdir(filepath.Join(m.mnt, "top", "t"), 0o755) }},
		{"remove a whole tree", func() error { return os.RemoveAll(filepath.Join(m.mnt, "n")) }},
		{"a directory made again", func() error { return os.Mkdir(filepath.Join(l, "a"), 0o755) }},
	}
	for _, s := range steps {
		if err := s.op(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		check(s.name)
	}
}

// TestLinksLookedUpAtOnce: two names of one file on disk, looked up at
// once, the first lookup's node registered by go-fuse after the second's:
// the server records the node go-fuse keeps for both names (it would
// have recorded the first lookup's, which go-fuse discarded).
func TestLinksLookedUpAtOnce(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"f": "one\n"}, beforeOpen: func(t testing.TB, root string) {
		if err := os.Link(filepath.Join(root, "f"), filepath.Join(root, "g")); err != nil {
			t.Fatal(err)
		}
	}})
	made, second := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func(key string) {
		if key == "f" {
			once.Do(func() {
				close(made)
				waitFor(second, 5*time.Second)
			})
		}
	}
	testHookMade.Store(&hook)
	defer testHookMade.Store(nil)
	first := make(chan error, 1)
	go func() {
		_, err := os.Lstat(filepath.Join(m.mnt, "f"))
		first <- err
	}()
	if !waitFor(made, 5*time.Second) {
		t.Fatal("f was not looked up")
	}
	_, err := os.Lstat(filepath.Join(m.mnt, "g"))
	close(second)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	testHookMade.Store(nil)

	known, ok := m.srv.nodes.Known(ino(t, filepath.Join(m.mnt, "f")), false)
	if !ok {
		t.Fatal("no node recorded for the file")
	}
	root := &m.srv.root.Inode
	for _, name := range []string{"f", "g"} {
		if in := nodes.At(root, name); in != known.EmbeddedInode() {
			t.Errorf("%s: go-fuse keeps node %p, the server recorded %p", name, in, known.EmbeddedInode())
		}
	}
}
