//go:build linux

package fusefs

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/draftfs/draftfs/overlay"
)

// TestConcurrency runs writers, readers, listers, buffer pushes and
// commits at once through the mount (run it with -race). No operation
// may fail, and once all is quiet the mount and the engine agree on
// every file. A read racing a change made elsewhere or a truncating
// rewrite may show a mix of two versions (the kernel's size of one, the
// bytes of the other; a package documentation limit): those are counted
// and logged, not failed. Reads issued after a change settled are exact
// (see the coherence tests).
func TestConcurrency(t *testing.T) {
	const writers, readers, buffered = 3, 3, 3
	files := map[string]string{"dir/": ""}
	for i := range buffered {
		files[fmt.Sprintf("b%d.txt", i)] = "disk\n"
	}
	m := testMount(t, mountOptions{files: files})
	bufs := m.ws.Buffers()
	for i := range buffered {
		if err := bufs.Open(fmt.Sprintf("b%d.txt", i), 1, []byte("push 1\n")); err != nil {
			t.Fatal(err)
		}
	}
	writtenRE := regexp.MustCompile(`^(gen \d+\n)?$`) // empty between O_TRUNC and the write
	pushedRE := regexp.MustCompile(`^(disk|push \d+)\n$`)

	duration := 2 * time.Second
	if testing.Short() {
		duration = 300 * time.Millisecond
	}
	stop := time.Now().Add(duration)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	var torn, reads, bufTorn, bufReads atomic.Int64
	fail := func(format string, a ...any) {
		select {
		case errs <- fmt.Errorf(format, a...):
		default:
		}
	}
	run := func(f func(rng *rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
			for time.Now().Before(stop) {
				f(rng)
			}
		}()
	}
	for w := range writers {
		gen := 0
		run(func(rng *rand.Rand) {
			gen++
			p := filepath.Join(m.mnt, fmt.Sprintf("w%d.txt", w))
			switch rng.IntN(8) {
			case 0:
				if err := os.Rename(p, p+".old"); err != nil && !errors.Is(err, fs.ErrNotExist) {
					fail("rename %s: %v", p, err)
				}
			case 1:
				if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					fail("remove %s: %v", p, err)
				}
			case 2:
				d := filepath.Join(m.mnt, "dir", fmt.Sprintf("d%d", w))
				if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
					fail("mkdir %s: %v", d, err)
				} else if err := os.Remove(d); err != nil {
					fail("rmdir %s: %v", d, err)
				}
			default:
				if err := os.WriteFile(p, fmt.Appendf(nil, "gen %d\n", gen), 0o644); err != nil {
					fail("write %s: %v", p, err)
				}
			}
		})
	}
	for range readers {
		run(func(rng *rand.Rand) {
			var name string
			var re *regexp.Regexp
			if rng.IntN(2) == 0 {
				name, re = fmt.Sprintf("w%d.txt", rng.IntN(writers)), writtenRE
			} else {
				name, re = fmt.Sprintf("b%d.txt", rng.IntN(buffered)), pushedRE
			}
			b, err := os.ReadFile(filepath.Join(m.mnt, name))
			switch {
			case errors.Is(err, fs.ErrNotExist) && re == writtenRE:
			case err != nil:
				fail("read %s: %v", name, err)
			case !re.Match(b) && re == pushedRE:
				bufTorn.Add(1)
			case !re.Match(b):
				torn.Add(1)
			}
			if re == pushedRE {
				bufReads.Add(1)
			} else {
				reads.Add(1)
			}
		})
	}
	run(func(rng *rand.Rand) {
		ents, err := os.ReadDir(m.mnt)
		if err != nil {
			fail("readdir: %v", err)
			return
		}
		for _, e := range ents {
			if _, err := os.Lstat(filepath.Join(m.mnt, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				fail("lstat %s: %v", e.Name(), err)
			}
		}
	})
	version := int64(1)
	run(func(rng *rand.Rand) {
		version++
		name := fmt.Sprintf("b%d.txt", rng.IntN(buffered))
		if _, err := bufs.Replace(name, version, fmt.Appendf(nil, "push %d\n", version)); err != nil {
			fail("push %s: %v", name, err)
		}
	})
	run(func(rng *rand.Rand) {
		time.Sleep(50 * time.Millisecond)
		_, err := m.d.Commit(overlay.CommitOptions{Source: overlay.SourceCLI})
		if err != nil && !errors.Is(err, overlay.ErrConflict) {
			fail("commit: %v", err)
		}
	})
	wg.Wait()
	close(errs)
	t.Logf("reads showing a mix of two versions: %d of %d of rewritten files, %d of %d of buffers", torn.Load(), reads.Load(), bufTorn.Load(), bufReads.Load())
	for err := range errs {
		t.Error(err)
	}
	// Quiet now: the mount and the engine agree on every file.
	view := m.d.Fs(overlay.SourceCLI)
	for w := range writers {
		name := fmt.Sprintf("w%d.txt", w)
		want, werr := readView(view, name)
		got, gerr := os.ReadFile(filepath.Join(m.mnt, name))
		if (werr == nil) != (gerr == nil) || string(got) != string(want) {
			t.Errorf("%s: mount %q (%v), engine %q (%v)", name, got, gerr, want, werr)
		}
	}
}

func readView(view *overlay.Fs, name string) ([]byte, error) {
	f, err := view.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, fi.Size())
	n, err := f.ReadAt(b, 0)
	if n == len(b) {
		err = nil
	}
	return b[:n], err
}
