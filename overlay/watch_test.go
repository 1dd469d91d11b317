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

// TestWatchAfter: the walk that watches every directory waits for
// WatchAfter (a daemon's start), and closing the workspace before does
// not wait for it.
func TestWatchAfter(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "a"), 0o755))
	walked := make(chan struct{}, 2)
	watchAllHook = func() { walked <- struct{}{} }
	t.Cleanup(func() { watchAllHook = nil })

	after := make(chan struct{})
	w, err := Open(Options{Root: root, StateDir: t.TempDir(), Watch: true, WatchAfter: after})
	must(t, err)
	select {
	case <-walked:
		t.Fatal("the walk started before WatchAfter was closed")
	case <-time.After(100 * time.Millisecond):
	}
	close(after)
	select {
	case <-walked:
	case <-time.After(time.Minute):
		t.Fatal("no walk once WatchAfter was closed")
	}
	must(t, w.Close())

	w, err = Open(Options{Root: root, StateDir: t.TempDir(), Watch: true, WatchAfter: make(chan struct{})})
	must(t, err)
	closed := make(chan error)
	go func() { closed <- w.Close() }()
	select {
	case err := <-closed:
		must(t, err)
	case <-time.After(time.Minute):
		t.Fatal("Close waits for a walk that never started")
	}
}
