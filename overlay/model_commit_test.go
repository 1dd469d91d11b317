//go:build linux

package overlay_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay"
)

// The model commits and undoes at random points too. A commit must
// leave the view as it was and put on the disk what the view shows
// (less the dirty editor buffers, which are the editor's, and sockets,
// which a commit leaves out); an undo must leave the view as it was and
// put back on the disk what the commit changed, and nothing else.

// commitStep is a commit the model made, for the undo of it.
type commitStep struct {
	before, after map[string]string // the disk's content (contentSnapshot)
	// undoable: nothing could have changed what the commit wrote in
	// the draft when the model changed nothing since (see model.changes)
	// and no handle was open for writing.
	undoable bool
	changes  int
	sockets  map[string]fs.FileMode // the reference's, which the commit dropped
}

// contentSnapshot describes a tree as a commit writes it: each path's
// type, permissions, and content or symlink target (the reference's
// as the view shows it); not its times (a commit writes its own), not
// sockets (a commit writes none).
func contentSnapshot(m *model, dir string) map[string]string {
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := de.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		desc := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSocket != 0:
			return nil
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %q", b)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if dir == m.ref {
				target = m.viewTarget(target)
			}
			desc += " -> " + target
		}
		snap[filepath.ToSlash(rel)] = desc
		return nil
	})
	if err != nil {
		m.t.Fatal(err)
	}
	return snap
}

// sameSnapshots fails the model where got and want differ.
func (m *model) sameSnapshots(what string, got, want map[string]string) {
	m.t.Helper()
	var diff []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s missing (want %s)", k, w))
		} else if g != w {
			diff = append(diff, fmt.Sprintf("%s is %s (want %s)", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s appeared (%s)", k, g))
		}
	}
	if len(diff) > 0 {
		sort.Strings(diff)
		m.fail("%s: the disk differs: %q", what, diff)
	}
}

// dropSockets removes the reference's sockets, as a commit does the
// view's (they are committed as nothing), and returns them with their
// modes.
func (m *model) dropSockets() map[string]fs.FileMode {
	out := map[string]fs.FileMode{}
	filepath.WalkDir(m.ref, func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.Type()&fs.ModeSocket != 0 {
			var fi fs.FileInfo
			if fi, err = de.Info(); err == nil {
				out[p] = fi.Mode()
				err = os.Remove(p)
			}
		}
		if err != nil {
			m.fail("reference: %v", err)
		}
		return nil
	})
	return out
}

// hardLinked reports whether the reference has a file with more than
// one name.
func (m *model) hardLinked() bool {
	linked := false
	filepath.WalkDir(m.ref, func(p string, de fs.DirEntry, err error) error {
		if fi, ferr := os.Lstat(p); err == nil && ferr == nil && !fi.IsDir() && fi.Sys().(*syscall.Stat_t).Nlink > 1 {
			linked = true
		}
		return nil
	})
	return linked
}

// writersOpen reports whether a handle is open for writing.
func (m *model) writersOpen() bool {
	for _, h := range m.handles {
		if h.flag != os.O_RDONLY {
			return true
		}
	}
	return false
}

func (m *model) opCommit() {
	bufs := m.env.bufs.List()
	for _, b := range bufs {
		if !m.untouched(b.Path) {
			// What a view shows at a path the agent changed under an
			// editor's buffer, once committed, is the editor's to say.
			return
		}
	}
	if m.hardLinked() {
		// A commit keeps hard links, and a write through one name of
		// a file linked on disk copies that name alone up (as kernel
		// overlayfs does without its index): the names part.
		return
	}
	m.closeReaders()
	before := contentSnapshot(m, m.env.root)
	want := contentSnapshot(m, m.ref)
	for _, b := range bufs {
		if !b.Dirty {
			continue
		}
		if v, ok := before[b.Path]; ok {
			want[b.Path] = v
		} else {
			delete(want, b.Path)
		}
	}
	res, err := m.env.d.Commit(overlay.CommitOptions{AllowSetid: true, AllowOwner: true, Source: overlay.SourceCLI})
	m.logf("commit: %v", err)
	if err != nil {
		var conflicts []overlay.Conflict
		if res != nil {
			conflicts = res.Conflicts
		}
		m.fail("commit: %v %+v", err, conflicts)
		return
	}
	after := contentSnapshot(m, m.env.root)
	m.sameSnapshots("commit", after, want)
	sockets := m.dropSockets()
	m.diskWant = diskSnapshot(m.t, m.env.root)
	if res.ID != 0 {
		m.commits = append(m.commits, commitStep{before: before, after: after, undoable: !m.writersOpen(), changes: m.changes, sockets: sockets})
	}
	m.compareTrees()
}

// closeReaders closes the handles open only for reading: one open
// across a commit or an undo keeps the object it had, which the view
// no longer shows there: it reads what it read, not what is written at
// its path later (as after an editor's atomic save), and fstat counts
// no link.
func (m *model) closeReaders() {
	open := m.handles[:0]
	for _, h := range m.handles {
		if h.flag == os.O_RDONLY {
			m.closeHandle(h)
		} else {
			open = append(open, h)
		}
	}
	m.handles = open
}

func (m *model) opUndo() {
	m.closeReaders()
	before := contentSnapshot(m, m.env.root)
	_, err := m.env.d.Undo(overlay.SourceCLI)
	m.logf("undo: %v", err)
	if len(m.commits) == 0 {
		if !errors.Is(err, overlay.ErrNothingToUndo) {
			m.fail("undo with no commit: %v, want %v", err, overlay.ErrNothingToUndo)
		}
		m.sameSnapshots("undo with no commit", contentSnapshot(m, m.env.root), before)
		return
	}
	top := &m.commits[len(m.commits)-1]
	if err != nil {
		if top.undoable && top.changes == m.changes && len(m.commits) <= overlay.UndoKeep {
			m.fail("undo right after a commit: %v", err)
		}
		m.sameSnapshots("undo refused", contentSnapshot(m, m.env.root), before)
		m.compareTrees()
		return
	}
	// What the commit changed goes back; the rest is as it is now.
	want := before
	for k, v := range top.before {
		if top.after[k] != v {
			want[k] = v
		}
	}
	for k := range top.after {
		if _, ok := top.before[k]; !ok {
			delete(want, k)
		}
	}
	m.sameSnapshots("undo", contentSnapshot(m, m.env.root), want)
	// The draft has the commit's sockets again.
	for p, mode := range top.sockets {
		if err := unix.Mknod(p, unix.S_IFSOCK|uint32(mode.Perm()), 0); err != nil {
			m.fail("reference: %v", err)
		}
	}
	m.commits = m.commits[:len(m.commits)-1]
	m.diskWant = diskSnapshot(m.t, m.env.root)
	m.compareTrees()
}
