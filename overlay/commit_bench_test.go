//go:build linux

package overlay

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
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

// BenchmarkCommitUndo10000 commits 10,000 new files in 100 new
// directories and undoes the commit (scripts/bench-scale's draft), and
// reports each; "native" copies the same files with one sync at the end
// (target: commit and undo each within 2x of it).
func BenchmarkCommitUndo10000(b *testing.B) {
	var commit, undo, native time.Duration
	for range b.N {
		b.StopTimer()
		_, d, f := cmSetup(b, nil)
		src := b.TempDir()
		for i := range 10000 {
			k := fmt.Sprintf("new%03d/n%03d.txt", i/100, i%100)
			must(b, f.MkdirAll(parentOf(k), 0o755))
			must(b, afero.WriteFile(f, k, []byte(k+"\n"), 0o644))
			must(b, os.MkdirAll(filepath.Join(src, parentOf(k)), 0o755))
			must(b, os.WriteFile(filepath.Join(src, k), []byte(k+"\n"), 0o644))
		}
		// What the setup wrote is on disk first: else the commit's
		// syncfs writes it too.
		unix.Sync()
		b.StartTimer()
		t0 := time.Now()
		if _, err := d.Commit(CommitOptions{}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := d.Undo(SourceCLI); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		cp := exec.Command("cp", "-a", src, filepath.Join(b.TempDir(), "copy"))
		if out, err := cp.CombinedOutput(); err != nil {
			b.Fatalf("cp: %v: %s", err, out)
		}
		unix.Sync()
		commit, undo, native = commit+t1.Sub(t0), undo+t2.Sub(t1), native+time.Since(t2)
	}
	b.ReportMetric(float64(commit.Milliseconds())/float64(b.N), "commit-ms")
	b.ReportMetric(float64(undo.Milliseconds())/float64(b.N), "undo-ms")
	b.ReportMetric(float64(native.Milliseconds())/float64(b.N), "cp+sync-ms")
}

// BenchmarkCheckpointWAL moves a write-ahead log of 4,096 records, each a
// new file's entry and inode (an untar's), or the same files' removal,
// into the database.
func BenchmarkCheckpointWAL(b *testing.B) {
	for _, remove := range []bool{false, true} {
		name := "new"
		if remove {
			name = "removed"
		}
		b.Run(name, func(b *testing.B) {
			s, err := openStore(b.TempDir(), false)
			if err != nil {
				b.Fatal(err)
			}
			defer s.close()
			const files = 4096
			write := func(i, round int, gone bool) {
				t := &txn{}
				key := fmt.Sprintf("r%06d/d%02d/f%04d.txt", round, i%50, i)
				ino := firstDraftIno + uint64(round*files+i)
				if gone {
					t.putEntry(key, nil)
					t.putInode(ino, nil)
				} else {
					t.putEntry(key, &entry{Kind: kindFile, Ino: ino})
					t.putInode(ino, &inode{Mode: 0o644, Data: true, File: uint64(i)})
				}
				if err := s.write(t); err != nil {
					b.Fatal(err)
				}
			}
			round := 0
			for b.Loop() {
				b.StopTimer()
				for i := range files - 1 {
					write(i, round, false)
				}
				if remove {
					if err := s.checkpoint(); err != nil {
						b.Fatal(err)
					}
					for i := range files - 1 {
						write(i, round, true)
					}
				}
				b.StartTimer()
				write(files-1, round, remove) // the record that fills the log
				if err := s.checkpoint(); err != nil {
					b.Fatal(err)
				}
				round++
			}
		})
	}
}
