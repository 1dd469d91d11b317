//go:build linux

package overlay

import (
	"testing"

	"github.com/spf13/afero"
)

// TestCheckpointCountsLines checks a checkpoint's added and deleted
// lines, with the new files' content kept from the capture and, over
// freshMax, read back from the chunks: the counts are the same.
func TestCheckpointCountsLines(t *testing.T) {
	for _, keep := range []int{freshMax, 0} {
		root := t.TempDir()
		cmWrite(t, root, map[string]string{"edit.txt": "1\n2\n3\n4\n5\n"})
		w, err := Open(Options{Root: root, StateDir: t.TempDir()})
		must(t, err)
		d, _ := w.Draft("")
		f := d.Fs(SourceMount)
		for name, content := range map[string]string{
			"new.txt":     "a\nb\nc\n",      // 3
			"partial.txt": "a\nb",           // 2
			"empty.txt":   "",               // 0
			"binary":      "a\x00\nb\x00\n", // binary: 0
			"edit.txt":    "1\n2\nthree\n4\n5\n",
		} {
			must(t, afero.WriteFile(f, name, []byte(content), 0o644))
		}
		saved := freshMax
		freshMax = keep
		cp, err := d.Checkpoint(Author{Source: SourceMount}, "")
		freshMax = saved
		must(t, err)
		if cp.Added != 6 || cp.Deleted != 1 || len(cp.Files) != 5 {
			t.Errorf("freshMax %d: %d files, +%d -%d, want 5 files, +6 -1", keep, len(cp.Files), cp.Added, cp.Deleted)
		}
		w.Close()
	}
}
