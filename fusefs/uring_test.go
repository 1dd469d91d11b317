//go:build linux

package fusefs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/fusefs/internal/uring"
	"github.com/draftfs/draftfs/overlay"
)

// TestMountIOURing: with Options.IOURing, where the kernel offers the
// ring and the server runs as root, the mount is served over it, and
// writes, reads, listings and renames through it reach the draft.
// (DRAFTFS_TEST_URING=1 runs the package's other tests that way too.)
func TestMountIOURing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("FUSE over io_uring needs root here: the mount is made with mount(2)")
	}
	if !uringAll {
		// Machine-wide and read at INIT only: on while this mount is
		// made, then back as it was (the connection keeps the ring).
		release, err := uring.HoldEnabled()
		if err != nil {
			t.Skip(err)
		}
		defer release()
	}
	m := testMount(t, mountOptions{files: map[string]string{"a.txt": "one\n"}, ring: true})
	if !m.srv.ring {
		t.Fatal("Options.IOURing: the mount is served over /dev/fuse (see its log)")
	}
	p := filepath.Join(m.mnt, "b.txt")
	if err := os.WriteFile(p, []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p, filepath.Join(m.mnt, "c.txt")); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(m.mnt)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 2 || names[0] != "a.txt" || names[1] != "c.txt" {
		t.Fatalf("listing: %v, want [a.txt c.txt]", names)
	}
	b, err := os.ReadFile(filepath.Join(m.mnt, "a.txt"))
	if err != nil || string(b) != "one\n" {
		t.Fatalf("read a.txt: %q, %v", b, err)
	}
	got, err := afero.ReadFile(m.d.Fs(overlay.SourceCLI), "c.txt")
	if err != nil || string(got) != "two\n" {
		t.Fatalf("the draft has c.txt = %q, %v", got, err)
	}
}
