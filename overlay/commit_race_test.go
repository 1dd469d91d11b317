//go:build linux

package overlay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/spf13/afero"
)

// TestConcurrentWritesBuffersAndCommits runs writers, buffer pushes,
// readers and commits at once (meant for -race), then checks that the
// last write to every file reached the disk.
func TestConcurrentWritesBuffersAndCommits(t *testing.T) {
	files := map[string]string{}
	for i := range 8 {
		files[fmt.Sprintf("w%d/f", i)] = "start\n"
		files[fmt.Sprintf("buf%d", i)] = "disk\n"
	}
	root, d, f := cmSetup(t, files)
	bufs := d.Workspace().Buffers()
	const rounds = 60
	var wg sync.WaitGroup
	final := make([]string, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := fmt.Sprintf("w%d/f", w)
			for i := range rounds {
				c := fmt.Sprintf("writer %d round %d\n", w, i)
				if err := afero.WriteFile(f, p, []byte(c), 0o644); err != nil {
					t.Error(err)
					return
				}
				final[w] = c
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range rounds {
			for b := range 8 {
				if _, err := bufs.Replace(fmt.Sprintf("buf%d", b), int64(i+2), []byte(fmt.Sprintf("typed %d\n", i))); err != nil {
					if err := bufs.Open(fmt.Sprintf("buf%d", b), int64(i+2), []byte("opened\n")); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range rounds {
			if _, err := d.Status(); err != nil {
				t.Error(err)
			}
			if _, err := d.Diff(); err != nil {
				t.Error(err)
			}
			if _, err := afero.ReadDir(f, "/"); err != nil {
				t.Error(err)
			}
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range rounds / 4 {
			if _, err := d.Commit(CommitOptions{Force: true}); err != nil && !errors.Is(err, ErrConflict) {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	if _, err := d.Commit(CommitOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	for w, c := range final {
		b, err := os.ReadFile(filepath.Join(root, fmt.Sprintf("w%d/f", w)))
		if err != nil || string(b) != c {
			t.Fatalf("w%d/f on disk: %q, want the last write %q (%v)", w, b, c, err)
		}
	}
	if got := cmStatus(t, d); got != "" {
		t.Fatalf("draft after the last commit: %q", got)
	}
}
