//go:build linux

package overlay

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Status, diff and commit ask of every changed path whether it changes
// anything (same) and whether the user changed it since (statusEntry):
// each reads the lower object, its attributes and often both contents,
// some twenty system calls a path. The memo
// keeps both answers per key together with everything they were
// computed from, and gives an answer back only while all of that is
// unchanged: the item (entry, base, inode, as a deep copy), the draft's
// data file and each lower object the answers read, by stat (device,
// inode number, mode, owner, size, mtime, ctime), the editor buffer at
// each of those paths, and the owner a new path would get (its disk
// parent's set-gid bit and group). Checking that costs one or two stats
// a path.
//
// ctime moves on every change of content, attributes or owner, but only
// at the file system clock's granularity: an object whose ctime is
// within racyWindow of the moment it was stat'ed could change again
// without its ctime moving (git's "racily clean" index entries), so no
// answer is kept for it. Any later change gets a ctime after the stat's
// moment minus one clock tick, hence after the recorded one.

// racyWindow is well above any file system clock tick (at most 10 ms
// with HZ=100).
const racyWindow = 100 * time.Millisecond

// memo holds the answers of same and statusEntry by key.
type memo struct {
	mu      sync.Mutex
	answers map[string]*answer
}

// answer is what was computed for one item, and from what. Its item,
// base and stamp never change once it is kept; same and entry are set
// as they are computed, while other passes may read them.
type answer struct {
	it    item // deep copy: its base and xattrs are the answer's own
	base  base // it.e.Base's value
	st    stamp
	same  atomic.Pointer[bool]
	entry atomic.Pointer[StatusEntry]
}

// stamp is what an item's answers read outside the draft's maps. It is
// kept with every answer (10,000 of them for a status of 10,000 paths),
// so its fields are ordered to leave no padding.
type stamp struct {
	// paths are the lower paths read, zero when unused. Which paths
	// they are the item says (its key, base, origin and rename), and an
	// answer is given back only for an equal item (answer.matches).
	paths  [3]pathStamp
	data   objStamp // the draft's data file
	parent objStamp // the disk parent of the key: mode and group only
}

// pathStamp is one lower path's disk object and editor buffer.
type pathStamp struct {
	obj objStamp
	buf bufStamp
}

// objStamp identifies a disk object's state; the zero value is "absent".
type objStamp struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
	mode         uint32
	uid, gid     uint32
	exists       bool
}

// bufStamp identifies an editor buffer's state.
type bufStamp struct {
	version  int64
	modified int64
	size     int
	dirty    bool
}

// stamper stamps the items of one pass over a draft's items, opening
// each disk directory once: a stamp then costs one fstatat a path.
type stamper struct {
	d    *Draft
	dirs map[string]*dirAt
	// buffers: an editor has a buffer open; anyBuffer: one with unsaved
	// text, which may show where the disk has nothing.
	buffers, anyBuffer bool
}

// dirAt is a disk directory opened for a pass (f nil: err says why not).
type dirAt struct {
	f     *os.File
	fd    int
	err   error
	stamp objStamp
}

func (d *Draft) stamper() *stamper {
	s := &stamper{d: d, dirs: map[string]*dirAt{}}
	if d.w.bufs != nil {
		s.buffers = len(d.w.bufs.List()) > 0
		s.anyBuffer = s.buffers && len(d.w.bufs.Children("")) > 0
	}
	return s
}

// close closes the directories the pass opened.
func (s *stamper) close() {
	for _, a := range s.dirs {
		if a.f != nil {
			a.f.Close()
		}
	}
}

// dir opens the disk directory p beneath the workspace, once a pass.
func (s *stamper) dir(p string) *dirAt {
	if a := s.dirs[p]; a != nil {
		return a
	}
	a := &dirAt{fd: -1}
	f, err := s.d.w.dir.Open(p, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err == nil {
		var st unix.Stat_t
		if err = unix.Fstat(int(f.Fd()), &st); err == nil {
			a.f, a.fd, a.stamp = f, int(f.Fd()), objStampOfUnix(&st)
		} else {
			f.Close()
		}
	}
	a.err = err
	s.dirs[p] = a
	return a
}

// lstat stamps the disk object at p, as diskLstat finds it.
func (s *stamper) lstat(p string) objStamp {
	a := s.dir(parentOf(p))
	switch {
	case a.fd >= 0:
		var st unix.Stat_t
		if err := unix.Fstatat(a.fd, baseOf(p), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return objStamp{}
		}
		return objStampOfUnix(&st)
	case errors.Is(a.err, fs.ErrNotExist) || errors.Is(a.err, syscall.ENOTDIR):
		return objStamp{}
	}
	// A symlink on the way: resolved as diskLstat does.
	if fi, err := s.d.diskLstat(p); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			return objStamp{exists: true, dev: st.Dev, ino: st.Ino, mode: st.Mode, uid: st.Uid, gid: st.Gid,
				size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
		}
	}
	return objStamp{}
}

// stampOf stamps what it's answers read, and reports whether answers
// computed from that may be kept (see racyWindow).
func (s *stamper) stampOf(it *item, n *inode) (stamp, bool) {
	var st stamp
	d := s.d
	if !d.w.osDisk || d.w.bufs == nil {
		return st, false
	}
	var room [len(st.paths)]string // not allocated per item
	paths := room[:0]              // under an opaque directory (NoLower) none
	switch {
	case it.e.Base == nil:
		paths = append(paths, it.key)
	case isGitIndex(it.e.Base.Path):
		return st, false // its answer reads other objects too (gitindex.go)
	case !it.e.Base.NoLower:
		paths = append(paths, it.e.Base.Path)
	}
	for _, p := range [...]string{it.from, it.e.Origin} {
		if p != "" && !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	before := time.Now().Add(-racyWindow).UnixNano()
	ok := true
	for i, p := range paths {
		ps := pathStamp{obj: s.lstat(p)}
		if !ps.obj.exists && s.anyBuffer {
			ok = false // an editor's unsaved file or directory may show there
		}
		if s.buffers {
			if b, found := d.w.bufs.Get(p); found {
				ps.buf = bufStamp{dirty: b.Dirty, version: b.Version, modified: b.Modified.UnixNano(), size: len(b.Text)}
			}
		}
		ok = ok && ps.obj.ctime < before
		st.paths[i] = ps
	}
	// same reads the data file only when a lower file was or is there.
	lowerFile := len(paths) > 0 && (st.paths[0].obj.exists || it.e.Base != nil && it.e.Base.Exists)
	if n != nil && n.Data && !it.e.redirect() && lowerFile {
		var u unix.Stat_t
		if d.statData(n.dataName(it.e.Ino), &u) == nil {
			st.data = objStampOfUnix(&u)
		}
		ok = ok && st.data.ctime < before
	}
	if a := s.dir(parentOf(it.key)); a.fd >= 0 {
		st.parent = objStamp{exists: true, mode: a.stamp.mode, gid: a.stamp.gid}
	} else if !errors.Is(a.err, fs.ErrNotExist) {
		ok = false // a symlink on the way, or a file: newOwner decides
	}
	return st, ok
}

// objStampOfUnix stamps a disk object from its stat.
func objStampOfUnix(st *unix.Stat_t) objStamp {
	return objStamp{exists: true, dev: st.Dev, ino: st.Ino, mode: st.Mode, uid: st.Uid, gid: st.Gid,
		size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// lookup returns the answer kept for it, if it was computed from what
// it and st describe.
func (m *memo) lookup(it *item, st stamp) *answer {
	m.mu.Lock()
	a := m.answers[it.key]
	m.mu.Unlock()
	if a == nil || a.st != st || !a.matches(it) {
		return nil
	}
	return a
}

// matches reports whether a was computed for an item equal to it.
func (a *answer) matches(it *item) bool {
	x, y := a.it, *it
	if x.key != y.key || x.change != y.change || x.from != y.from || x.source != y.source || x.leaf != y.leaf || x.hasN != y.hasN {
		return false
	}
	if x.e.Kind != y.e.Kind || x.e.Ino != y.e.Ino || x.e.Opaque != y.e.Opaque || x.e.Ctime != y.e.Ctime || x.e.Origin != y.e.Origin {
		return false
	}
	if (y.e.Base == nil) != (x.e.Base == nil) || (y.e.Base != nil && *y.e.Base != a.base) {
		return false
	}
	return equalInode(&x.n, &y.n)
}

// equalInode compares two inodes field by field.
func equalInode(a, b *inode) bool {
	if a.Mode != b.Mode || a.Data != b.Data || a.Target != b.Target || a.Mtime != b.Mtime || a.Atime != b.Atime ||
		a.Ctime != b.Ctime || a.Rdev != b.Rdev || a.Uid != b.Uid || a.Gid != b.Gid || a.Born != b.Born || a.File != b.File {
		return false
	}
	return maps.EqualFunc(a.Xattr, b.Xattr, bytes.Equal)
}

// store keeps an answer for it (same or entry, whichever is set),
// adding to one already kept for the same item and stamp, and returns
// the answer. Its stamp never changes once kept.
func (m *memo) store(it *item, st stamp, same *bool, entry *StatusEntry) *answer {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.answers[it.key]
	if a == nil || a.st != st || !a.matches(it) {
		a = &answer{it: *it, st: st}
		a.it.st = nil
		a.it.n.Xattr = maps.Clone(it.n.Xattr)
		if it.e.Base != nil {
			a.base = *it.e.Base
			a.it.e.Base = &a.base
		}
		if m.answers == nil {
			m.answers = map[string]*answer{}
		}
		m.answers[it.key] = a
	}
	if same != nil {
		a.same.Store(same)
	}
	if entry != nil {
		a.entry.Store(entry)
	}
	return a
}

// prune forgets the answers of keys no longer among the draft's items.
func (m *memo) prune(all []item) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.answers) <= len(all) {
		return
	}
	keep := make(map[string]bool, len(all))
	for _, it := range all {
		keep[it.key] = true
	}
	for k := range m.answers {
		if !keep[k] {
			delete(m.answers, k)
		}
	}
}

// sameMemo is same, answered from the memo when nothing it reads
// changed. It leaves the stamp in it.st for statusEntry. n is the
// item's inode as same takes it: nil or equal to it.n.
func (d *Draft) sameMemo(it *item, n *inode, s *stamper) bool {
	if (n == nil && !equalInode(&it.n, &inode{})) || (n != nil && !equalInode(n, &it.n)) {
		return d.same(*it, n)
	}
	st, ok := s.stampOf(it, n)
	if !ok {
		return d.same(*it, n)
	}
	// it.st points at the kept answer's stamp, which never changes: a
	// stamp of its own per item would be 10,000 allocations a status.
	if a := d.memo.lookup(it, st); a != nil {
		if same := a.same.Load(); same != nil {
			it.st = &a.st
			return *same
		}
	}
	v := d.same(*it, n)
	it.st = &d.memo.store(it, st, &v, nil).st
	return v
}

// statusEntryMemo is statusEntry, answered from the memo when nothing it
// reads changed since changes stamped it.
func (d *Draft) statusEntryMemo(it item, known ownerCache) (StatusEntry, error) {
	if it.st == nil {
		return d.statusEntry(it, known)
	}
	if a := d.memo.lookup(&it, *it.st); a != nil {
		if e := a.entry.Load(); e != nil {
			return *e, nil
		}
	}
	s, err := d.statusEntry(it, known)
	if err == nil {
		d.memo.store(&it, *it.st, nil, &s)
	}
	return s, err
}
