//go:build linux

package overlay

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/afero"
)

// BenchmarkStatus10000 measures Status of a draft with 10,000 entries:
// half modified disk files, half new files (target: under 50 ms).
// "again" is a status after one that changed nothing since (answers from
// the memo, see status_memo.go), "cold" one with the memo emptied first.
func BenchmarkStatus10000(b *testing.B) {
	files := map[string]string{}
	for i := range 5000 {
		files[fmt.Sprintf("d%02d/f%04d", i%50, i)] = "old\n"
	}
	_, d, f := cmSetup(b, files)
	for i := range 10000 {
		must(b, f.MkdirAll(fmt.Sprintf("d%02d", i%50), 0o755))
		must(b, afero.WriteFile(f, fmt.Sprintf("d%02d/f%04d", i%50, i), []byte("new\n"), 0o644))
	}
	time.Sleep(racyWindow) // what was just written is not kept (racyWindow)
	for _, cold := range []bool{false, true} {
		b.Run(map[bool]string{false: "again", true: "cold"}[cold], func(b *testing.B) {
			if _, err := d.Status(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if cold {
					b.StopTimer()
					d.memo = memo{}
					b.StartTimer()
				}
				st, err := d.Status()
				if err != nil || len(st) != 10000 {
					b.Fatalf("%d entries, %v", len(st), err)
				}
			}
		})
	}
}

// BenchmarkCommit1000 commits 1,000 small modified files; compare with
// BenchmarkDirectWrite1000, the same files written directly with temp +
// fsync + rename (target: within 2x).
func BenchmarkCommit1000(b *testing.B) {
	files := map[string]string{}
	for i := range 1000 {
		files[fmt.Sprintf("d%02d/f%04d", i%20, i)] = "old\n"
	}
	for range b.N {
		b.StopTimer()
		_, d, f := cmSetup(b, files)
		for k := range files {
			must(b, afero.WriteFile(f, k, []byte("new content\n"), 0o644))
		}
		b.StartTimer()
		if _, err := d.Commit(CommitOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDirectWrite1000(b *testing.B) {
	files := map[string]string{}
	for i := range 1000 {
		files[fmt.Sprintf("d%02d/f%04d", i%20, i)] = "old\n"
	}
	for range b.N {
		b.StopTimer()
		root := b.TempDir()
		cmWrite(b, root, files)
		b.StartTimer()
		for k := range files {
			p := filepath.Join(root, k)
			tmp := p + ".tmp"
			fd, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			fd.Write([]byte("new content\n"))
			fd.Sync()
			fd.Close()
			os.Chmod(tmp, 0o644)
			if err := os.Rename(tmp, p); err != nil {
				b.Fatal(err)
			}
		}
	}
}
