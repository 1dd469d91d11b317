//go:build linux

package overlay

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestOpenDoesNotWaitForWatches: opening a workspace with watching
// returns before its directories are watched, and once they are, a
// subscriber is told to drop what it cached (an overflow), which covers
// a change made on disk before its directory was watched.
func TestOpenDoesNotWaitForWatches(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "a/b"), 0o755))
	release := make(chan struct{})
	watchAllHook = func() { <-release }
	t.Cleanup(func() { watchAllHook = nil })
	opened := make(chan *Workspace)
	go func() {
		w, err := Open(Options{Root: root, StateDir: t.TempDir(), Watch: true})
		if err != nil {
			t.Error(err)
		}
		opened <- w
	}()
	var w *Workspace
	select {
	case w = <-opened:
	case <-time.After(time.Minute):
		close(release)
		t.Fatal("Open waits for the workspace's directories to be watched")
	}
	if w == nil {
		close(release)
		return
	}
	defer w.Close()
	sub := w.Subscribe()
	defer sub.Close()
	// Before any directory is watched: no event of its own.
	must(t, os.WriteFile(filepath.Join(root, "a/b/x"), []byte("x"), 0o644))
	close(release)
	deadline := time.After(time.Minute)
	for {
		select {
		case c := <-sub.C:
			if c.Overflow {
				goto watched
			}
		case <-deadline:
			t.Fatal("no overflow once the directories were watched")
		}
	}
watched:
	// And now a change deep in the tree has its own event.
	must(t, os.WriteFile(filepath.Join(root, "a/b/y"), []byte("y"), 0o644))
	for {
		select {
		case c := <-sub.C:
			if c.Kind == ChangeDisk && c.Path == "a/b/y" {
				return
			}
		case <-deadline:
			t.Fatal("no disk change event for a/b/y")
		}
	}
}
