//go:build linux

package overlay

import (
	"fmt"
	"io/fs"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
)

// tenMiB is 10 MiB of text lines.
func tenMiB(r *rand.Rand) []byte {
	b := make([]byte, 0, 10<<20)
	for len(b) < 10<<20 {
		b = fmt.Appendf(b, "line %08x %016x %016x\n", len(b), r.Uint64(), r.Uint64())
	}
	return b[:10<<20]
}

// rewrite changes one line of b at a random place, as an agent's edit
// of a large file does, and writes the whole file through the draft.
func rewrite(b testing.TB, f afero.Fs, r *rand.Rand, content []byte) {
	at := r.Intn(len(content) - 64)
	copy(content[at:], fmt.Sprintf("edited %016x", r.Uint64()))
	if err := afero.WriteFile(f, "big.txt", content, 0o644); err != nil {
		b.Fatal(err)
	}
}

func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// BenchmarkCheckpoint measures one checkpoint after a small edit of a
// 10 MiB file (the file is read and chunked again; its unchanged chunks
// are not stored again).
func BenchmarkCheckpoint(b *testing.B) {
	root := b.TempDir()
	w, err := Open(Options{Root: root, StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	d, _ := w.Draft("")
	f := d.Fs(SourceMount)
	r := rand.New(rand.NewSource(1))
	content := tenMiB(r)
	rewrite(b, f, r, content)
	if _, err := d.Checkpoint(Author{Source: SourceMount}, ""); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		rewrite(b, f, r, content)
		b.StartTimer()
		if _, err := d.Checkpoint(Author{Source: SourceMount}, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckpointUnchanged measures a checkpoint of a draft of 1,000
// files of which one changed.
func BenchmarkCheckpointUnchanged(b *testing.B) {
	root := b.TempDir()
	w, err := Open(Options{Root: root, StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	d, _ := w.Draft("")
	f := d.Fs(SourceMount)
	for i := range 10 {
		if err := f.MkdirAll(fmt.Sprintf("d%d", i), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 1000 {
		if err := afero.WriteFile(f, fmt.Sprintf("d%d/f%d", i%10, i), []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := d.Checkpoint(Author{Source: SourceMount}, ""); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		afero.WriteFile(f, "d0/f0", []byte(fmt.Sprintf("edit %d\n", i)), 0o644)
		b.StartTimer()
		if _, err := d.Checkpoint(Author{Source: SourceMount}, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTimelineRewrite10MiB is a session rewriting a 10 MiB file
// 1,000 times, a checkpoint after each: it reports the timeline's size
// on disk (timeline-MiB) beside the 10 GiB the versions add up to.
func BenchmarkTimelineRewrite10MiB(b *testing.B) {
	for range b.N {
		root, state := b.TempDir(), b.TempDir()
		w, err := Open(Options{Root: root, StateDir: state})
		if err != nil {
			b.Fatal(err)
		}
		d, _ := w.Draft("")
		f := d.Fs(SourceMount)
		r := rand.New(rand.NewSource(1))
		content := tenMiB(r)
		for range 1000 {
			rewrite(b, f, r, content)
			if _, err := d.Checkpoint(Author{Source: SourceMount}, ""); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(dirBytes(filepath.Join(d.dir, "timeline")))/(1<<20), "timeline-MiB")
		w.Close()
		os.RemoveAll(state)
	}
}

// manyFiles is a draft of n new small files in 100 directories.
func manyFiles(b *testing.B, n int) (*Draft, afero.Fs) {
	w, err := Open(Options{Root: b.TempDir(), StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	d, _ := w.Draft("")
	f := d.Fs(SourceMount)
	for i := range n {
		if err := f.MkdirAll(fmt.Sprintf("d%d", i%100), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := afero.WriteFile(f, fmt.Sprintf("d%d/f%d", i%100, i), fmt.Appendf(nil, "file %d\n", i), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return d, f
}

// BenchmarkCheckpointNewFiles measures the first checkpoint of a draft
// of 5,000 new files (an untar's), per file.
func BenchmarkCheckpointNewFiles(b *testing.B) {
	const n = 5000
	for range b.N {
		b.StopTimer()
		d, _ := manyFiles(b, n)
		b.StartTimer()
		if _, err := d.Checkpoint(Author{Source: SourceMount}, ""); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/file")
}

// BenchmarkCheckpointLargeDraft measures a checkpoint of a draft of
// 20,000 files of which one changed.
func BenchmarkCheckpointLargeDraft(b *testing.B) {
	d, f := manyFiles(b, 20000)
	if _, err := d.Checkpoint(Author{Source: SourceMount}, ""); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		afero.WriteFile(f, "d0/f0", fmt.Appendf(nil, "edit %d\n", i), 0o644)
		b.StartTimer()
		if _, err := d.Checkpoint(Author{Source: SourceMount}, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTimelineExpire measures an expiry of the timeline of a draft
// of 5,000 files that keeps 100 checkpoints or more (each after an edit
// of one file), one of them dropped.
func BenchmarkTimelineExpire(b *testing.B) {
	d, f := manyFiles(b, 5000)
	const keep = 100
	d.tl.keep = math.MaxInt // none expires yet
	for i := range b.N + keep {
		afero.WriteFile(f, "d0/f0", fmt.Appendf(nil, "edit %d\n", i), 0o644)
		if _, err := d.Checkpoint(Author{Source: SourceMount}, ""); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		d.tl.mu.Lock()
		d.tl.keep = keep + b.N - 1 - i
		d.tl.expireLocked()
		d.tl.mu.Unlock()
	}
}
