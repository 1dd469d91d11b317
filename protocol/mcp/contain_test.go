package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestReadRacesSwap: while something swaps a directory of the workspace
// with a symlink to a directory outside (atomically, over and over),
// read_text_file of a file below it never returns the outside file:
// what was checked is what is opened.
func TestReadRacesSwap(t *testing.T) {
	e := newEnv(t)
	out := filepath.Join(t.TempDir(), "outside")
	for dir, text := range map[string]string{out: "OUTSIDE\n", e.abs("race"): "inside\n"} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "b.txt"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// race.swap is the other half: the swap exchanges the two names.
	if err := os.Symlink(out, e.abs("race.swap")); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if err := unix.Renameat2(unix.AT_FDCWD, e.abs("race"), unix.AT_FDCWD, e.abs("race.swap"), unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("swap: %v", err)
				return
			}
			swaps.Add(1)
		}
	}()
	// Bounded by calls and by time, whichever ends first: a loaded
	// machine runs fewer calls, never a failure.
	const calls = 3000
	deadline := time.Now().Add(10 * time.Second)
	inside, outside, refused := 0, 0, 0
	for i := 0; i < calls && time.Now().Before(deadline); i++ {
		r := e.call("read_text_file", m("path", "race/b.txt"))
		switch {
		case r.isError:
			refused++
		case strings.Contains(r.text, "OUTSIDE"):
			outside++
		default:
			inside++
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d swaps; reads: %d inside, %d refused, %d outside", swaps.Load(), inside, refused, outside)
	if outside > 0 {
		t.Fatalf("%d of %d reads returned the file outside the workspace", outside, inside+refused+outside)
	}
}

// TestFIFONeverHangs: a named pipe in the workspace is refused by reads
// with a clear error and passed over by searches, where both used to
// wait forever for a writer.
func TestFIFONeverHangs(t *testing.T) {
	e := newEnv(t)
	if err := unix.Mkfifo(e.abs("sub/pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.fails("read_text_file", m("path", "sub/pipe"), "named pipe (FIFO), not a regular file")
		if r := e.ok("read_multiple_files", m("paths", []string{"sub/pipe", "a.txt"})); !strings.Contains(r, "not a regular file") || !strings.Contains(r, "hello") {
			t.Errorf("read_multiple_files: %s", r)
		}
		if r := e.ok("search_content", m("path", ".", "pattern", "export")); !strings.Contains(r, "y.ts") {
			t.Errorf("search_content: %s", r)
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		// Unblock the reader so the test ends: a writer that closes.
		if f, err := os.OpenFile(e.abs("sub/pipe"), os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatal("a read of the named pipe waited for a writer")
	}
}
