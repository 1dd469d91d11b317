//go:build linux

package overlay_test

import (
	"testing"
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
