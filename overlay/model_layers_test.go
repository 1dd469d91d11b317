//go:build linux

package overlay_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/vfstest"
)

// reopen restarts the engine: open handles go, as with a daemon that
// stopped; the buffers stay.
func (m *model) reopen() {
	for _, h := range m.handles {
		m.closeHandle(h)
	}
	m.handles = nil
	m.logf("reopen")
	m.env.reopen()
}

// untouchedPaths lists the regular files (wantFile) or the directories
// of the reference that no changing operation of the view reached.
func (m *model) untouchedPaths(wantFile bool) []string {
	var out []string
	for _, p := range append(m.refPaths(), "") {
		if !m.untouched(p) && p != "" {
			continue
		}
		fi, err := os.Lstat(m.r(p))
		if err != nil {
			continue
		}
		if wantFile && fi.Mode().IsRegular() || !wantFile && fi.IsDir() {
			out = append(out, p)
		}
	}
	return out
}

// newNameIn is a name in dir that nothing holds and nothing touched.
func (m *model) newNameIn(dir string) (string, bool) {
	if dir != "" && !m.untouched(dir) {
		return "", false
	}
	p := path.Join(dir, modelNames[m.rng.IntN(len(modelNames))])
	if _, err := os.Lstat(m.r(p)); err == nil || !m.untouched(p) {
		return "", false
	}
	if _, ok := m.env.bufs.Get(p); ok {
		return "", false
	}
	return p, true
}

// openBuffer opens an editor buffer over an untouched file, or for a new
// file in an untouched directory: the view shows its text, and so does
// the reference, as if the editor had saved it.
func (m *model) openBuffer() {
	var p string
	if files := m.untouchedPaths(true); len(files) > 0 && m.rng.IntN(3) > 0 {
		p = files[m.rng.IntN(len(files))]
	} else if dirs := m.untouchedPaths(false); len(dirs) > 0 {
		var ok bool
		if p, ok = m.newNameIn(dirs[m.rng.IntN(len(dirs))]); !ok {
			return
		}
	} else {
		return
	}
	text := m.randBytes()
	m.version++
	m.logf("buffer open %s %q", p, text)
	if err := m.env.bufs.Open(p, m.version, text); err != nil {
		m.fail("buffer open %s: %v", p, err)
		return
	}
	if err := writeInPlace(m.r(p), text); err != nil {
		m.fail("reference: %v", err)
	}
}

// writeInPlace rewrites a file keeping its inode (as an editor saving in
// place does), creating it 0644 if missing.
func writeInPlace(p string, b []byte) error {
	return os.WriteFile(p, b, 0o644)
}

func (m *model) opBuffer() {
	var open []string
	for _, b := range m.env.bufs.List() {
		if m.untouched(b.Path) {
			open = append(open, b.Path)
		}
	}
	if len(open) == 0 || m.rng.IntN(3) == 0 {
		m.openBuffer()
		return
	}
	p := open[m.rng.IntN(len(open))]
	switch m.rng.IntN(3) {
	case 0: // the user types
		text := m.randBytes()
		m.version++
		m.logf("buffer change %s %q", p, text)
		if _, err := m.env.bufs.Replace(p, m.version, text); err != nil {
			m.fail("buffer change %s: %v", p, err)
		}
		if err := writeInPlace(m.r(p), text); err != nil {
			m.fail("reference: %v", err)
		}
	case 1: // the editor saves: the disk gets the text
		s, _ := m.env.bufs.Get(p)
		m.logf("buffer save %s", p)
		if err := writeInPlace(m.env.disk(p), s.Text); err != nil {
			m.fail("save %s: %v", p, err)
		}
		if err := m.env.bufs.Save(p); err != nil {
			m.fail("buffer save %s: %v", p, err)
		}
		// The view shows the disk, which has the text now: the disk may
		// have changed under a buffer saved before (opDisk).
		if err := writeInPlace(m.r(p), s.Text); err != nil {
			m.fail("reference: %v", err)
		}
		m.diskWant = diskSnapshot(m.t, m.env.root)
	case 2: // closed without saving: the disk shows again
		if _, err := os.Lstat(m.env.disk(p)); err != nil && m.opensOf(p) {
			// A handle on a file only the editor had keeps the text it
			// last read, not the text the editor last had: skipped.
			return
		}
		m.logf("buffer close %s", p)
		if err := m.env.bufs.Close(p); err != nil {
			m.fail("buffer close %s: %v", p, err)
		}
		b, err := os.ReadFile(m.env.disk(p))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			err = os.Remove(m.r(p))
		case err == nil:
			err = writeInPlace(m.r(p), b)
		}
		if err != nil {
			m.fail("reference: %v", err)
		}
	}
}

// opensOf reports whether a handle is open on p.
func (m *model) opensOf(p string) bool {
	for _, h := range m.handles {
		if h.key == p {
			return true
		}
	}
	return false
}

// opDisk changes the disk under the draft, where the draft has nothing
// and no buffer hides the disk, and the reference likewise.
func (m *model) opDisk() {
	dirty := func(p string) bool {
		s, ok := m.env.bufs.Get(p)
		return ok && s.Dirty
	}
	files, dirs := m.untouchedPaths(true), m.untouchedPaths(false)
	both := func(what string, fn func(root string) error) {
		m.logf("disk: %s", what)
		for _, root := range []string{m.env.root, m.ref} {
			if err := fn(root); err != nil {
				m.fail("disk %s: %v", what, err)
			}
		}
		m.diskWant = diskSnapshot(m.t, m.env.root)
	}
	switch m.rng.IntN(4) {
	case 0: // a file changes
		if len(files) == 0 {
			return
		}
		p := files[m.rng.IntN(len(files))]
		if dirty(p) {
			return
		}
		b := m.randBytes()
		both(fmt.Sprintf("write %s %q", p, b), func(root string) error {
			return writeInPlace(filepath.Join(root, p), b)
		})
	case 1: // a file appears
		if len(dirs) == 0 {
			return
		}
		p, ok := m.newNameIn(dirs[m.rng.IntN(len(dirs))])
		if !ok {
			return
		}
		b := m.randBytes()
		both(fmt.Sprintf("create %s %q", p, b), func(root string) error {
			return os.WriteFile(filepath.Join(root, p), b, 0o644)
		})
	case 2: // a directory appears
		if len(dirs) == 0 {
			return
		}
		p, ok := m.newNameIn(dirs[m.rng.IntN(len(dirs))])
		if !ok {
			return
		}
		both("mkdir "+p, func(root string) error { return os.Mkdir(filepath.Join(root, p), 0o755) })
	case 3: // a file or an empty directory goes
		cands := append(files, dirs...)
		if len(cands) == 0 {
			return
		}
		p := cands[m.rng.IntN(len(cands))]
		if p == "" || dirty(p) {
			return
		}
		if _, ok := m.env.bufs.Get(p); ok {
			return
		}
		if ents, _ := os.ReadDir(m.env.disk(p)); len(ents) > 0 {
			return
		}
		if ents, _ := os.ReadDir(m.r(p)); len(ents) > 0 {
			return
		}
		both("remove "+p, func(root string) error { return os.Remove(filepath.Join(root, p)) })
	}
}

// compareTrees walks both trees and compares every path.
func (m *model) compareTrees() {
	m.t.Helper()
	var walk func(p string)
	walk = func(p string) {
		vents, verr := m.env.v.ReadDir(p)
		rents, rerr := os.ReadDir(m.r(p))
		if !m.same("final readdir "+p, verr, rerr) {
			return
		}
		if got, want := dirString(vents), dirString(rents); got != want {
			m.fail("final tree %q: view %s, reference %s", p, got, want)
			return
		}
		for _, re := range rents {
			k := path.Join(p, re.Name())
			vfi, verr := m.env.v.Lstat(k)
			rfi, rerr := os.Lstat(m.r(k))
			if !m.same("final lstat "+k, verr, rerr) {
				continue
			}
			m.compareInfo("final "+k, vfi, rfi, true)
			switch {
			case rfi.IsDir():
				walk(k)
			case rfi.Mode()&fs.ModeSymlink != 0:
				vt, verr := m.env.v.Readlink(k)
				rt, rerr := os.Readlink(m.r(k))
				if m.same("final readlink "+k, verr, rerr) && vt != m.viewTarget(rt) {
					m.fail("final symlink %s: view -> %q, reference -> %q", k, vt, rt)
				}
			case rfi.Mode().IsRegular() && rfi.Mode().Perm()&0o400 != 0:
				vb, verr := readAll(m.env.v, k)
				rb, rerr := os.ReadFile(m.r(k))
				if m.same("final read "+k, verr, rerr) && !bytes.Equal(vb, rb) {
					m.fail("final content %s: view %q, reference %q", k, vb, rb)
				}
			}
		}
	}
	walk("")
}

// opMknod makes a FIFO or a socket. Not a device node: the reference
// would open one, where the view never opens a special file.
func (m *model) opMknod(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, false); !ok {
		return
	}
	m.touch(p)
	typ, ifmt := fs.ModeNamedPipe, uint32(unix.S_IFIFO)
	if m.rng.IntN(2) == 0 {
		typ, ifmt = fs.ModeSocket, unix.S_IFSOCK
	}
	perm := o.Mode
	verr := m.env.v.Mknod(p, typ|perm, 0)
	rerr := syscallErr("mknod", p, unix.Mknod(m.r(p), ifmt|uint32(perm), 0))
	m.same(fmt.Sprintf("mknod %s %v", p, typ|perm), verr, rerr)
}

// fifo reports whether p leads to a FIFO in the reference, which an
// open there would wait on.
// specialParent reports whether p's parent is a FIFO or a socket:
// os.RemoveAll opens the parent with open(2), which a socket answers
// with ENXIO and a FIFO blocks, where the view says ENOTDIR.
func (m *model) specialParent(p string) bool {
	fi, err := os.Lstat(m.r(parentOfKey(p)))
	return err == nil && fi.Mode()&(fs.ModeNamedPipe|fs.ModeSocket) != 0
}

func (m *model) fifo(p string) bool {
	fi, err := os.Stat(m.r(p))
	return err == nil && fi.Mode()&fs.ModeNamedPipe != 0
}

// ctimeMoves runs op, which reports whether it did the same on both
// sides, and then requires the ctime of each object moved (named by
// the path before and the path after op) to have moved on both sides or
// on neither: the values differ (the view's objects were made at other
// times), their movement must not. It returns op's report.
func (m *model) ctimeMoves(op func() bool, moved ...[2]string) bool {
	m.t.Helper()
	ctime := func(p string) (v, r time.Time, ok bool) {
		vfi, verr := m.env.v.Lstat(p)
		rfi, rerr := os.Lstat(m.r(p))
		if verr != nil || rerr != nil {
			return v, r, false
		}
		rst := rfi.Sys().(*syscall.Stat_t)
		return vfi.Sys().(*overlay.Attr).Ctime, time.Unix(rst.Ctim.Unix()), true
	}
	type times struct {
		v, r time.Time
		ok   bool
	}
	before := make([]times, len(moved))
	for i, pair := range moved {
		before[i].v, before[i].r, before[i].ok = ctime(pair[0])
	}
	// Every stamp op makes is at or after this: the kernel stamps files
	// from its coarse clock (or finer), the engine from time.Now.
	var coarse unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &coarse); err != nil {
		m.t.Fatal(err)
	}
	if !op() {
		return false
	}
	for i, pair := range moved {
		v, r, ok := ctime(pair[1])
		if !ok || !before[i].ok {
			continue
		}
		// The kernel's coarse clock ticks every few milliseconds and lags
		// time.Now, with which the engine stamps some changes itself: a
		// stamp op makes can be older than one made just before it. Only
		// once the coarse clock passed the old stamp before op began is
		// a movement told apart from none. (Measuring the gap after op,
		// as a fixed guard did, let a slow op under load pass a stamp
		// made early in it.)
		if !time.Unix(coarse.Unix()).After(before[i].v) {
			continue
		}
		if vm, rm := v.After(before[i].v), r.After(before[i].r); vm != rm {
			m.fail("ctime of %s (now %s): moved in the view %v, in the reference %v [view %v -> %v, ref %v -> %v, now %v]", pair[0], pair[1], vm, rm, before[i].v, v, before[i].r, r, time.Now())
		}
	}
	return true
}
