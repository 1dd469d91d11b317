package control

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/overlay"
)

// TestHeavyMethods: commit, discard and undo run between the server's
// Heavy hook and what it returns (the daemon lifts its memory limit
// meanwhile); reads and buffer pushes do not.
func TestHeavyMethods(t *testing.T) {
	e := newEnv(t)
	var running, calls atomic.Int32
	e.srv.opts.Heavy = func(what string) func() {
		if what == BurstOfChanges {
			return func() {} // TestHeavyBurst
		}
		running.Add(1)
		calls.Add(1)
		return func() { running.Add(-1) }
	}
	e.write(t, "a.txt", "a\n")
	c := e.client(t)
	step := func(what string, heavy bool, fn func() error) {
		t.Helper()
		before := calls.Load()
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := calls.Load() - before; heavy && got != 1 || !heavy && got != 0 {
			t.Errorf("%s: Heavy called %d times", what, got)
		}
		if n := running.Load(); n != 0 {
			t.Errorf("%s: %d heavy works not ended", what, n)
		}
	}
	d, err := e.ws.Draft("")
	if err != nil {
		t.Fatal(err)
	}
	write := func() error { return afero.WriteFile(d.Fs(overlay.SourceMount), "a.txt", []byte("b\n"), 0o644) }
	step("write", false, write)
	step("status", false, func() error { _, err := c.Status(""); return err })
	step("buffer open", false, func() error { return c.OpenBuffer("b.txt", 1, "b\n") })
	step("buffer close", false, func() error { return c.CloseBuffer("b.txt") })
	step("commit", true, func() error { _, err := c.Commit("", CommitOptions{}, nil); return err })
	step("undo", true, func() error { _, err := c.Undo(""); return err })
	step("discard", true, func() error { _, err := c.Discard("", DiscardOptions{All: true}); return err })
}

// TestHeavyBurst: a burst of changes (writes through a mount) runs
// under Heavy until the feed has been quiet for burstQuiet.
func TestHeavyBurst(t *testing.T) {
	e := newEnv(t)
	var running atomic.Int32
	e.srv.opts.Heavy = func(what string) func() {
		if what != BurstOfChanges {
			t.Errorf("Heavy(%q) for writes", what)
		}
		running.Add(1)
		return func() { running.Add(-1) }
	}
	d, err := e.ws.Draft("")
	if err != nil {
		t.Fatal(err)
	}
	wait := func(want int32, within time.Duration) {
		t.Helper()
		for deadline := time.Now().Add(within); running.Load() != want; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d heavy works running, want %d", running.Load(), want)
			}
		}
	}
	for i := range 20 {
		if err := afero.WriteFile(d.Fs(overlay.SourceMount), fmt.Sprintf("f%d", i), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wait(1, 5*time.Second)
	wait(0, burstQuiet+5*time.Second)
}
