//go:build linux

package overlay_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/vfstest"
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
	return vfstest.Describe(m.t, dir, func(p string, fi fs.FileInfo) (string, error) {
		switch {
		case fi.Mode()&fs.ModeSocket != 0:
			return "", nil
		case fi.Mode()&fs.ModeSymlink != 0 && dir == m.ref:
			target, err := os.Readlink(p)
			return fi.Mode().String() + " -> " + m.viewTarget(target), err
		}
		c, err := vfstest.Content(p, fi)
		return fi.Mode().String() + c, err
	})
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

// dropSockets removes the reference's sockets (those at the paths
// applied, if not nil), as a commit does the view's (they are committed
// as nothing), and returns them with their modes.
func (m *model) dropSockets(applied map[string]bool) map[string]fs.FileMode {
	out := map[string]fs.FileMode{}
	filepath.WalkDir(m.ref, func(p string, de fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(m.ref, p)
		if err == nil && de.Type()&fs.ModeSocket != 0 && (applied == nil || applied[filepath.ToSlash(rel)]) {
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

// opCommit commits the draft, or (some) a random part of it: then
// the paths the commit reports as applied must be on disk as the view
// shows them, and the view must not change.
func (m *model) opCommit(some bool) {
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
	var keys []string
	if some {
		st, err := m.env.d.Status()
		if err != nil {
			m.fail("status: %v", err)
			return
		}
		for _, e := range st {
			if m.rng.IntN(2) == 0 {
				keys = append(keys, strings.TrimSuffix(e.Path, "/"))
			}
		}
		if len(keys) == 0 {
			return
		}
	}
	res, err := m.env.d.Commit(overlay.CommitOptions{Keys: keys, AllowSetid: true, AllowOwner: true, Source: overlay.SourceCLI})
	m.logf("commit %q: %v", keys, err)
	if err != nil {
		var conflicts []overlay.Conflict
		if res != nil {
			conflicts = res.Conflicts
		}
		m.fail("commit: %v %+v", err, conflicts)
		return
	}
	after := contentSnapshot(m, m.env.root)
	got := after
	var applied map[string]bool // nil: all
	if some {
		// What else the disk has is the draft's to commit later.
		applied = map[string]bool{}
		for _, e := range res.Applied {
			applied[e.Path], applied[e.From] = true, e.From != ""
		}
		only := func(snap map[string]string) map[string]string {
			out := map[string]string{}
			for k, v := range snap {
				if applied[k] {
					out[k] = v
				}
			}
			return out
		}
		got, want = only(after), only(want)
	}
	m.sameSnapshots("commit", got, want)
	sockets := m.dropSockets(applied)
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

// opDiscard discards the whole draft: the view shows the disk again
// (and the editor's buffers), and so does the reference, made a copy of
// the disk. Handles go first: one open across a discard keeps the
// draft's object, which the view no longer shows.
func (m *model) opDiscard() {
	for _, h := range m.handles {
		m.closeHandle(h)
	}
	m.handles = nil
	_, err := m.env.d.Discard(nil, overlay.SourceCLI)
	m.logf("discard: %v", err)
	if err != nil {
		m.fail("discard: %v", err)
		return
	}
	ents, err := os.ReadDir(m.ref)
	if err != nil {
		m.t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(m.ref, e.Name())); err != nil {
			m.t.Fatal(err)
		}
	}
	if err := m.copyDisk(""); err != nil {
		m.t.Fatalf("reference: %v", err)
	}
	for _, b := range m.env.bufs.List() {
		if s, ok := m.env.bufs.Get(b.Path); ok && b.Dirty {
			if err := writeInPlace(m.r(b.Path), s.Text); err != nil {
				m.t.Fatalf("reference: %v", err)
			}
		}
	}
	checkSnapshot(m.t, m.env.root, m.diskWant) // a discard writes nothing there
	m.compareTrees()
}

// copyDisk copies the disk's tree at p to the reference: types, modes,
// content, symlink targets (as the reference's), FIFOs.
func (m *model) copyDisk(p string) error {
	src, dst := m.env.disk(p), m.r(p)
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	switch {
	case fi.IsDir():
		if p != "" {
			if err := os.Mkdir(dst, 0o700); err != nil {
				return err
			}
		}
		ents, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := m.copyDisk(path.Join(p, e.Name())); err != nil {
				return err
			}
		}
		return os.Chmod(dst, fi.Mode().Perm())
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if rest, ok := strings.CutPrefix(t, m.env.root+"/"); ok {
			t = m.ref + "/" + rest
		}
		return os.Symlink(t, dst)
	case fi.Mode()&fs.ModeNamedPipe != 0:
		if err := unix.Mkfifo(dst, 0o600); err != nil {
			return err
		}
		return os.Chmod(dst, fi.Mode().Perm())
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		return err
	}
	return os.Chmod(dst, fi.Mode().Perm())
}
