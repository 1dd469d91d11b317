//go:build linux

package overlay_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
)

// TestEditorFileHandleUnlinked: a read handle on a file only an editor
// has describes it with link count 0 once its name is removed, whatever
// the view makes at that name afterwards (a directory, a new file, a
// directory swapped in by RENAME_EXCHANGE), and 1 while a rename keeps
// it named.
func TestEditorFileHandleUnlinked(t *testing.T) {
	after := []struct {
		name  string
		do    func(e *viewEnv)
		nlink uint32
	}{
		{"removed", func(e *viewEnv) {}, 0},
		{"a directory made there", func(e *viewEnv) { must(e.t, e.v.Mkdir("g", 0o755)) }, 0},
		{"a new file made there", func(e *viewEnv) { mustWrite(e.t, e.v, "g", "another file\n") }, 0},
	}
	for _, a := range after {
		t.Run(a.name, func(t *testing.T) {
			e := newViewEnv(t, nil)
			must(t, e.bufs.Open("g", 1, []byte("editor's only\n")))
			h, err := e.v.Open("g")
			must(t, err)
			defer h.Close()
			must(t, e.v.Remove("g"))
			a.do(e)
			fi, err := h.Stat()
			if err != nil || attrOf(t, fi).Nlink != a.nlink {
				t.Fatalf("stat of the handle: %v, %v; want link count %d", fi, err, a.nlink)
			}
		})
	}
	t.Run("renamed", func(t *testing.T) {
		e := newViewEnv(t, nil)
		must(t, e.bufs.Open("g", 1, []byte("editor's only\n")))
		h, err := e.v.Open("g")
		must(t, err)
		defer h.Close()
		must(t, e.v.Rename("g", "h"))
		if fi, err := h.Stat(); err != nil || attrOf(t, fi).Nlink != 1 {
			t.Fatalf("stat of the handle: %v, %v; want link count 1", fi, err)
		}
	})
}

// savedText is the file savedEditorFile makes.
const savedText = "an editor's new file, saved\n"

// savedEditorFile opens a read handle on g, a file only an editor has,
// which the editor then saves (savedText); with read, the handle reads
// it once since the save.
func savedEditorFile(t *testing.T, read bool) (*viewEnv, afero.File) {
	t.Helper()
	e := newViewEnv(t, map[string]string{"keep": "k"})
	must(t, e.bufs.Open("g", 1, []byte(savedText)))
	h, err := e.v.Open("g")
	must(t, err)
	t.Cleanup(func() { h.Close() })
	must(t, os.WriteFile(filepath.Join(e.root, "g"), []byte(savedText), 0o644))
	must(t, e.bufs.Save("g"))
	if read {
		buf := make([]byte, 64)
		if n, _ := h.ReadAt(buf, 0); string(buf[:n]) != savedText {
			t.Fatalf("read after the save: %q", buf[:n])
		}
	}
	return e, h
}

// TestEditorFileSavedThenCopiedUp: a read handle on a file only an
// editor had follows it once saved, into the draft's copy when the view
// changes it (before or after the handle's first read since the save,
// or after the editor's buffer changed again), as a handle on one inode
// does.
func TestEditorFileSavedThenCopiedUp(t *testing.T) {
	for _, order := range []string{"copied up before a read", "read, then copied up", "changed again, then copied up"} {
		readFirst := order == "read, then copied up"
		t.Run(order, func(t *testing.T) {
			e, h := savedEditorFile(t, readFirst)
			buf := make([]byte, 64)
			want := savedText[:5]
			if order == "changed again, then copied up" {
				// The buffer hides the saved file again (the handle
				// has not opened it yet), and the copy-up takes its
				// text.
				_, err := e.bufs.Replace("g", 2, []byte("typed on\n"))
				must(t, err)
				want = "typed"
			}
			must(t, e.v.Truncate("g", 5))
			n, err := h.ReadAt(buf, 0)
			if string(buf[:n]) != want || err != io.EOF {
				t.Fatalf("read after the view truncated it: %q, %v; want %q, EOF", buf[:n], err, want)
			}
		})
	}
}

// TestEditorFileSavedStillNamed: a read handle on a file only an editor
// had, saved since, is still the file at its path (link count 1) after
// its first read since the save, which opens the disk file: the file
// took the disk's number then, not the number it had in the editor; so
// is the draft's copy of it. Found by TestModel/buffers (seeds
// 1795774310609681251 and 1795774992568071082).
func TestEditorFileSavedStillNamed(t *testing.T) {
	for _, read := range []bool{false, true} {
		e, h := savedEditorFile(t, read)
		if fi, err := h.Stat(); err != nil || attrOf(t, fi).Nlink != 1 {
			t.Fatalf("read since the save %v: stat of the handle: %v, %v; want link count 1", read, fi, err)
		}
		// The view writes it: the handle reads the draft's copy, which
		// has the disk file's number, and is still the file at g.
		mustWrite(t, e.v, "g", "rewritten\n")
		fi, err := h.Stat()
		vfi, verr := e.v.Lstat("g")
		if err != nil || verr != nil || attrOf(t, fi).Nlink != 1 || attrOf(t, fi).Ino != attrOf(t, vfi).Ino {
			t.Fatalf("read since the save %v: stat of the handle once copied up: %v, %v (the view: %v, %v); want link count 1, the view's number",
				read, fi, err, vfi, verr)
		}
		must(t, e.v.Remove("g"))
		if fi, err := h.Stat(); err != nil || attrOf(t, fi).Nlink != 0 {
			t.Fatalf("read since the save %v: stat of the handle once removed: %v, %v; want link count 0", read, fi, err)
		}
	}
}
