//go:build linux

package overlay_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/vfstest"
)

// TestConcurrentView runs writers, readers, renames, removals and editor
// buffer updates on one draft at once (run it with -race), then checks
// what each of them must have left: no write lost, no copy-up done
// twice, renames whole, the disk untouched.
func TestConcurrentView(t *testing.T) {
	tree := map[string]string{"shared.log": "", "moving/inner/x": "x", "ro/": ""}
	for i := range 8 {
		tree[fmt.Sprintf("d/f%d", i)] = strings.Repeat("disk ", i+1)
	}
	e := newViewEnv(t, tree)
	before := diskSnapshot(t, e.root)
	v := e.v
	const rounds = 64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	report := func(format string, args ...any) {
		select {
		case errs <- fmt.Errorf(format, args...):
		default:
		}
	}
	// Allowed failures of operations racing with renames and removals.
	racing := func(err error) bool {
		n := overlay.Errno(err)
		return err == nil || n == syscall.ENOENT || n == syscall.ENOTDIR || n == syscall.EEXIST || n == syscall.ENOTEMPTY
	}
	run := func(fn func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				fn(i)
			}
		}()
	}

	// Each writer owns a file: its content must be exactly what it wrote.
	for w := range 3 {
		p := fmt.Sprintf("w%d", w)
		run(func(i int) {
			f, err := v.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				report("%s: open: %v", p, err)
				return
			}
			if _, err := f.WriteAt([]byte(fmt.Sprintf("%04d", i)), int64(4*i)); err != nil {
				report("%s: write: %v", p, err)
			}
			f.Close()
		})
	}
	// Appenders to one lower file: the first write of each copies it up,
	// concurrently; no line may be lost.
	for a := range 3 {
		run(func(i int) {
			f, err := v.OpenFile("shared.log", os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				report("shared.log: open: %v", err)
				return
			}
			if _, err := f.Write([]byte(fmt.Sprintf("appender %d line %d\n", a, i))); err != nil {
				report("shared.log: write: %v", err)
			}
			f.Close()
		})
	}
	// A directory moves back and forth; a file moves between names.
	run(func(i int) {
		from, to := "moving", "moved"
		if i%2 == 1 {
			from, to = to, from
		}
		if err := v.Rename(from, to); err != nil {
			report("rename %s %s: %v", from, to, err)
		}
	})
	run(func(i int) {
		from, to := fmt.Sprintf("d/f%d", i%8), fmt.Sprintf("d/g%d", i%8)
		if i%16 >= 8 {
			from, to = to, from
		}
		if err := v.Rename(from, to); err != nil {
			report("rename %s %s: %v", from, to, err)
		}
	})
	// Editor buffers change under the readers.
	run(func(i int) {
		p := fmt.Sprintf("d/f%d", i%8)
		if i%5 == 4 {
			e.bufs.Close(p)
			return
		}
		if err := e.bufs.Open(p, int64(i+1), []byte(fmt.Sprintf("buffer %d", i))); err != nil {
			report("buffer %s: %v", p, err)
		}
	})
	// Files come and go in a directory being listed.
	run(func(i int) {
		p := fmt.Sprintf("ro/t%d", i%4)
		if i%2 == 0 {
			if err := afero.WriteFile(v, p, []byte("t"), 0o644); !racing(err) {
				report("create %s: %v", p, err)
			}
		} else if err := v.Remove(p); !racing(err) {
			report("remove %s: %v", p, err)
		}
	})
	// Readers see whole states: every listed name can be described,
	// or has just gone.
	for r := range 3 {
		run(func(i int) {
			dir := []string{"d", "", "ro", "moving/inner", "moved/inner"}[(i+r)%5]
			ents, err := v.ReadDir(dir)
			if !racing(err) {
				report("readdir %q: %v", dir, err)
			}
			for _, de := range ents {
				p := dir + "/" + de.Name()
				if _, err := v.Lstat(p); !racing(err) {
					report("lstat %s: %v", p, err)
				}
				if de.Type().IsRegular() {
					if _, err := readAll(v, p); !racing(err) && !errors.Is(err, fs.ErrNotExist) {
						report("read %s: %v", p, err)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	for w := range 3 {
		p := fmt.Sprintf("w%d", w)
		var want bytes.Buffer
		for i := range rounds {
			fmt.Fprintf(&want, "%04d", i)
		}
		if got := mustRead(t, v, p); got != want.String() {
			t.Errorf("%s: %q, want %q", p, got, want.String())
		}
	}
	log := mustRead(t, v, "shared.log")
	for a := range 3 {
		for i := range rounds {
			if line := fmt.Sprintf("appender %d line %d\n", a, i); !strings.Contains(log, line) {
				t.Errorf("shared.log lost %q", line)
			}
		}
	}
	// rounds is even: the directory is back at its name, whole.
	vfstest.WantContent(t, e.v, "moving/inner/x", "x")
	vfstest.WantMissing(t, e.v, "moved")
	// rounds/8 is even: every file is back at its first name.
	for i := range 8 {
		vfstest.WantMissing(t, e.v, fmt.Sprintf("d/g%d", i))
		if _, err := v.Lstat(fmt.Sprintf("d/f%d", i)); err != nil {
			t.Errorf("d/f%d: %v", i, err)
		}
	}
	listing := treeString(t, v)
	e.reopen()
	if got := treeString(t, e.v); got != listing {
		t.Errorf("after reopen the view is\n%s\nwas\n%s", got, listing)
	}
	checkSnapshot(t, e.root, before)
}

// treeString describes every path of a view with its type, size and
// content.
func treeString(t testing.TB, v *overlay.Fs) string {
	t.Helper()
	var b strings.Builder
	err := afero.Walk(v, "", func(p string, fi fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d", p, fi.Mode(), fi.Size())
		if fi.Mode().IsRegular() {
			c, err := readAll(v, p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %q", c)
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestLstatRacingDiscard describes a file while the draft's copy of it
// is written and discarded over and over: the path always exists, in the
// draft or on disk, so no Lstat may fail (it once stat'ed a data file a
// discard had just removed).
func TestLstatRacingDiscard(t *testing.T) {
	e := newViewEnv(t, map[string]string{"f": "disk"})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := afero.WriteFile(e.v, "f", []byte(fmt.Sprint(i)), 0o644); err != nil {
				t.Error(err)
				return
			}
			if _, err := e.d.Discard([]string{"f"}, overlay.SourceCLI); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 20000 {
		if _, err := e.v.Lstat("f"); err != nil {
			t.Errorf("lstat: %v", err)
			break
		}
	}
	close(stop)
	wg.Wait()
}
