//go:build linux

package overlay

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestWatchTree: every directory is watched, through entries of every
// kind, and no symbolic link is followed.
func TestWatchTree(t *testing.T) {
	root := t.TempDir()
	for i := range 30 {
		must(t, os.MkdirAll(filepath.Join(root, fmt.Sprintf("d%02d/e/f%d", i%7, i)), 0o755))
		must(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("d%02d/file%d-%s", i%7, i, strings.Repeat("n", 200))), []byte("x"), 0o644))
	}
	for i := range 300 { // more than one read of the directory
		must(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("d03/g%03d-%s", i, strings.Repeat("n", 200))), nil, 0o644))
	}
	must(t, os.Mkdir(filepath.Join(root, "d03/zz"), 0o755))
	must(t, os.Symlink(filepath.Join(root, "d00"), filepath.Join(root, "d01/link")))
	must(t, os.Symlink(t.TempDir(), filepath.Join(root, "outside")))
	var want []string
	must(t, filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.IsDir() {
			want = append(want, p)
		}
		return err
	}))
	// The walk starts once subscribed: its end (an overflow) is not
	// missed.
	after := make(chan struct{})
	w, err := Open(Options{Root: root, StateDir: t.TempDir(), Watch: true, WatchAfter: after})
	must(t, err)
	defer w.Close()
	sub := w.Subscribe()
	defer sub.Close()
	close(after)
	deadline := time.After(time.Minute)
wait:
	for {
		select {
		case c := <-sub.C:
			if c.Overflow {
				break wait // every directory is watched
			}
		case <-deadline:
			t.Fatal("the walk did not end within a minute")
		}
	}
	got := w.watcher.fw.WatchList()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("watched %d directories, want %d:\n%q\nwant\n%q", len(got), len(want), got, want)
	}
}

// BenchmarkWatchFileCreate looks at a file made on disk as the watcher
// does at every create: as a possible new directory to watch.
func BenchmarkWatchFileCreate(b *testing.B) {
	root := b.TempDir()
	must(b, os.WriteFile(filepath.Join(root, "f"), nil, 0o644))
	x := &watcher{done: make(chan struct{})}
	for b.Loop() {
		x.addTree(filepath.Join(root, "f"))
	}
}
