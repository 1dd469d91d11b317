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
