//go:build linux

package overlay_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay"
)

// TestHeldFile: a held handle on a disk file, an editor's unsaved text,
// a file only an editor has and a draft file keeps reading it once its
// name is unlinked or renamed over, takes writes and ftruncate as a
// descriptor of an unlinked file does, and describes it with link count
// 0; a second held handle on it (a FUSE node's twin) shares what the
// first wrote. Neither the disk nor the editor sees the writes, and the
// copy goes with the last handle.
func TestHeldFile(t *testing.T) {
	layers := []struct {
		name  string
		setup func(e *viewEnv) string // makes "f", returns its content
	}{
		{"disk", func(e *viewEnv) string { return "from disk\n" }},
		{"buffer", func(e *viewEnv) string {
			must(e.t, e.bufs.Open("f", 1, []byte("unsaved text\n")))
			return "unsaved text\n"
		}},
		{"buffer only", func(e *viewEnv) string {
			must(e.t, e.bufs.Open("only", 1, []byte("editor's only\n")))
			must(e.t, e.v.Rename("only", "f"))
			return "editor's only\n"
		}},
		{"draft", func(e *viewEnv) string {
			mustWrite(e.t, e.v, "f", "in the draft\n")
			return "in the draft\n"
		}},
	}
	ways := []struct {
		name string
		drop func(e *viewEnv) error
	}{
		{"unlinked", func(e *viewEnv) error { return e.v.Remove("f") }},
		{"renamed over", func(e *viewEnv) error {
			mustWrite(e.t, e.v, "g", "replacement\n")
			return e.v.Rename("g", "f")
		}},
	}
	for _, l := range layers {
		for _, w := range ways {
			t.Run(l.name+"/"+w.name, func(t *testing.T) {
				e := newViewEnv(t, map[string]string{"f": "from disk\n"})
				want := l.setup(e)
				before := diskSnapshot(t, e.root)
				bufBefore, _ := e.bufs.Get("f")
				h := hold(t, e.v, "f")
				twin := hold(t, e.v, "f")
				must(t, w.drop(e))

				mustReadAt(t, h, want)
				if fi, err := h.Stat(); err != nil || attrOf(t, fi).Nlink != 0 {
					t.Fatalf("stat before a write: %v, %v; want link count 0", fi, err)
				}
				if _, err := h.WriteAt([]byte("FROM"), 0); err != nil {
					t.Fatalf("write after the name went: %v", err)
				}
				must(t, h.Truncate(int64(len(want))+2))
				want = "FROM" + want[4:] + "\x00\x00"
				mustReadAt(t, h, want)
				mustReadAt(t, twin, want)
				if _, err := twin.WriteAt([]byte("twin"), 0); err != nil {
					t.Fatalf("twin's write: %v", err)
				}
				want = "twin" + want[4:]
				mustReadAt(t, h, want)
				fi, err := h.Stat()
				must(t, err)
				if a := attrOf(t, fi); a.Nlink != 0 || fi.Size() != int64(len(want)) || fi.Mode().Perm() != 0o644 || fi.Name() != "f" {
					t.Errorf("stat: nlink %d, size %d, mode %v, name %q; want 0, %d, 0644, f", a.Nlink, fi.Size(), fi.Mode(), fi.Name(), len(want))
				}

				if w.name == "renamed over" {
					if got := mustRead(t, e.v, "f"); got != "replacement\n" {
						t.Errorf("the name now reads %q", got)
					}
				} else if _, err := e.v.Lstat("f"); !os.IsNotExist(err) {
					t.Errorf("lstat of the unlinked name: %v", err)
				}
				checkSnapshot(t, e.root, before)
				if bufAfter, _ := e.bufs.Get("f"); string(bufAfter.Text) != string(bufBefore.Text) {
					t.Errorf("editor's text %q, was %q", bufAfter.Text, bufBefore.Text)
				}
				must(t, h.Close())
				mustReadAt(t, twin, want)
				must(t, twin.Close())
				if left := dataFiles(t, e.d, e.state); len(left) > 1 || len(left) == 1 && w.name == "unlinked" {
					t.Errorf("data files left: %v", left)
				}
			})
		}
	}
}

// TestHeldFileNamed: the first write through a held handle while the
// name still names its file copies the file up under that name, as a
// write through any descriptor would.
func TestHeldFileNamed(t *testing.T) {
	e := newViewEnv(t, map[string]string{"f": "from disk\n"})
	h := hold(t, e.v, "f")
	defer h.Close()
	if _, err := h.WriteAt([]byte("FROM"), 0); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, e.v, "f"); got != "FROM disk\n" {
		t.Errorf("the name reads %q, want the write", got)
	}
	fi, err := h.Stat()
	must(t, err)
	if attrOf(t, fi).Nlink != 1 {
		t.Errorf("link count %d, want 1", attrOf(t, fi).Nlink)
	}
	mustReadFile(t, e.disk("f"), "from disk\n")
	if st, err := e.d.Status(); err != nil || len(st) != 1 {
		t.Errorf("status %v, %v: want f modified", st, err)
	}
}

// TestHeldFileSeekData: SEEK_DATA and SEEK_HOLE through a held handle,
// on the disk's file and on the copy a write made.
func TestHeldFileSeekData(t *testing.T) {
	e := newViewEnv(t, map[string]string{"f": "0123456789"})
	h := hold(t, e.v, "f")
	defer h.Close()
	must(t, e.v.Remove("f"))
	for _, stage := range []string{"disk", "copy"} {
		if pos, err := h.Seek(3, unix.SEEK_DATA); err != nil || pos != 3 {
			t.Errorf("%s: SEEK_DATA 3: %d, %v", stage, pos, err)
		}
		if pos, err := h.Seek(3, unix.SEEK_HOLE); err != nil || pos != 10 {
			t.Errorf("%s: SEEK_HOLE 3: %d, %v", stage, pos, err)
		}
		if _, err := h.Seek(10, unix.SEEK_DATA); errnoOf(err) != syscall.ENXIO {
			t.Errorf("%s: SEEK_DATA at the end: %v, want ENXIO", stage, err)
		}
		_, err := h.WriteAt([]byte("x"), 0)
		must(t, err)
	}
	must(t, overlay.Fallocate(h, 0, 0, 20))
	if fi, err := h.Stat(); err != nil || fi.Size() != 20 {
		t.Errorf("after fallocate: %v, %v; want size 20", fi, err)
	}
}

// TestHeldDraftFileOpensOnUse: holding a draft file opens no
// descriptor (a mount holds every file it unlinks, and an rm -rf reads
// none of them again); the first read after its name went opens it
// then, and it reads what the file held. Closing them leaves no data
// file but spares, whether a handle was used or not.
func TestHeldDraftFileOpensOnUse(t *testing.T) {
	e := newViewEnv(t, map[string]string{"keep": "x"})
	const n = 20
	for i := range n {
		mustWrite(t, e.v, fmt.Sprintf("f%d", i), fmt.Sprintf("file %d\n", i))
	}
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		must(t, err)
		return len(ents)
	}
	before := fds()
	var held []afero.File
	for i := range n {
		held = append(held, hold(t, e.v, fmt.Sprintf("f%d", i)))
	}
	// At most: a finalizer may close a descriptor another test left.
	if got := fds(); got > before {
		t.Errorf("%d descriptors open after holding %d draft files, %d before", got, n, before)
	}
	for i := range n {
		must(t, e.v.Remove(fmt.Sprintf("f%d", i)))
	}
	mustReadAt(t, held[3], "file 3\n")
	if got := fds(); got > before+1 {
		t.Errorf("%d descriptors open after reading one held file, %d before", got, before)
	}
	for _, h := range held {
		must(t, h.Close())
	}
	if err := held[0].Close(); err == nil {
		t.Error("a second close of a held handle succeeded")
	}
	if got := fds(); got > before {
		t.Errorf("%d descriptors open after closing the held files, %d before", got, before)
	}
	if left := dataFiles(t, e.d, e.state); len(left) > 0 {
		t.Errorf("data files left: %v", left)
	}
}

func hold(t *testing.T, v *overlay.Fs, name string) afero.File {
	t.Helper()
	f, err := v.Hold(name)
	if err != nil {
		t.Fatalf("hold %s: %v", name, err)
	}
	return f
}

func mustReadAt(t *testing.T, f afero.File, want string) {
	t.Helper()
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
	if err != nil || string(b) != want {
		t.Fatalf("read: %q, %v; want %q", b, err, want)
	}
}

func mustReadFile(t *testing.T, name, want string) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil || string(b) != want {
		t.Errorf("%s: %q, %v; want %q", name, b, err, want)
	}
}

// dataFiles lists the data files of every draft in state, but d's
// spares (see spares.go).
func dataFiles(t *testing.T, d *overlay.Draft, state string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(state, func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() || filepath.Base(filepath.Dir(p)) != "data" {
			return err
		}
		if overlay.IsSpare(d, de.Name()) {
			return nil
		}
		out = append(out, strings.TrimPrefix(p, state))
		return nil
	})
	must(t, err)
	return out
}
