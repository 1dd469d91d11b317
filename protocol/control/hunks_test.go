package control

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/draftfs/draftfs/overlay"
)

// TestHunks: draft/hunks lists a file's hunks with IDs that draft/commit
// and draft/discard take; a stale ID is refused as such.
func TestHunks(t *testing.T) {
	e := newEnv(t)
	base := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n"
	e.write(t, "f.txt", base)
	c := e.client(t)
	f, err := NewFiles(c, "", overlay.SourceMCP)
	must(t, err)
	agent := strings.Replace(strings.Replace(base, "2\n", "two\n", 1), "15\n", "fifteen\n", 1)
	must(t, f.WriteFile("f.txt", []byte(agent), 0o644))
	fh, err := c.Hunks("")
	must(t, err)
	if len(fh) != 1 || len(fh[0].Hunks) != 2 || fh[0].Path != "f.txt" {
		t.Fatalf("hunks %+v", fh)
	}
	first, second := fh[0].Hunks[0], fh[0].Hunks[1]
	if _, err := c.Commit("", CommitOptions{Hunks: []string{second.ID}, Paths: []string{"f.txt"}}, nil); err == nil {
		t.Fatal("commit with paths and hunks: no error")
	}
	_, err = c.Commit("", CommitOptions{Hunks: []string{second.ID}}, nil)
	must(t, err)
	if b, _ := os.ReadFile(filepath.Join(e.root, "f.txt")); string(b) != strings.Replace(base, "15\n", "fifteen\n", 1) {
		t.Fatalf("disk: %q", b)
	}
	if _, err := c.Discard("", DiscardOptions{Hunks: []string{second.ID}}); !errors.Is(err, overlay.ErrNoHunk) {
		t.Fatalf("discard of a committed hunk: %v", err)
	}
	fh, err = c.Hunks("")
	must(t, err)
	// The disk changed: the hunk left has another ID.
	if len(fh) != 1 || len(fh[0].Hunks) != 1 || fh[0].Hunks[0].Text != first.Text || fh[0].Hunks[0].ID == first.ID {
		t.Fatalf("hunks after: %+v (first was %+v)", fh, first)
	}
	dropped, err := c.Discard("", DiscardOptions{Hunks: []string{fh[0].Hunks[0].ID}})
	must(t, err)
	if len(dropped) != 1 || dropped[0] != "f.txt" {
		t.Fatalf("discard: %v", dropped)
	}
	if st, _ := c.Status(""); len(st) != 0 {
		t.Fatalf("status: %+v", st)
	}
}
