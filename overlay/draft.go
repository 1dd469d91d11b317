//go:build linux

package overlay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Draft is one named copy-on-write layer over a workspace's buffers and
// disk. Its merged view is [Draft.Fs]; the review operations are methods.
type Draft struct {
	w    *Workspace // read only
	name string     // read only
	dir  string     // read only: the draft's state directory
	// data is a descriptor of the data directory (O_PATH): data files
	// are opened and stat'ed relative to it, without walking dir.
	data int       // read only
	st   *store    // read only
	tl   *timeline // read only

	// commitMu serialises commit, discard and undo: they look at the disk
	// and the draft as a whole.
	commitMu sync.Mutex

	mu      draftLock // protects the following (lock.go)
	entries map[string]*entry
	// children names, for each directory key, the children at or below
	// which the draft has entries; below counts the entries strictly
	// below each key. Both are indexes of entries.
	children map[string]map[string]struct{}
	below    map[string]int
	// subdirs is, for each directory key, how many more subdirectories
	// the draft's entries in it make than the lower directory has: added
	// to the disk's link count, it gives the merged directory's without
	// listing the disk (see dirLinks).
	subdirs map[string]int
	inodes  map[uint64]*inode
	// ctimes are the ctimes of lower objects a chmod or chown to what
	// they had moved (see touchLocked), by key.
	ctimes map[string]int64
	// ctimeOnly are the draft inodes whose ctime alone moved since their
	// last record (a chmod or chown to what they had: see touchLocked):
	// the next record carries them, or flushCtimes.
	ctimeOnly map[uint64]struct{}
	links     map[uint64]int // entries naming each inode
	nextIno   uint64
	// writers counts the handles open for writing on each inode: a
	// commit keeps their entries (see runLocked).
	writers map[uint64]int
	// lastLog is the path and source of the last change logged, so that
	// consecutive writes of one file by one source log once (within a
	// step of the timeline).
	lastLog logMark
	// captures counts the timeline's captures of the draft: a handle
	// open for writing logs its writes again after one (see
	// dataFile.logged), so that every step's changes are in its part of
	// the log. Incremented with mu held for reading.
	captures atomic.Uint64
	// touched are the entries' keys and the inodes changed since the
	// timeline last captured the draft (timeline.capture), inodes whose
	// data file was opened for writing or set attributes of too: what
	// the next capture reads again. nil until the first capture, which
	// reads everything. Written with mu held for writing, or for reading
	// by the capture.
	touched     map[string]struct{}
	touchedInos map[uint64]struct{}
	closed      bool

	// filesMu protects the following; lock order d.mu, then filesMu.
	filesMu sync.Mutex
	// handles counts the open handles on each inode number (a draft
	// inode's, or a lower object's, which a copy-up keeps); orphans keeps
	// the metadata of a draft inode whose last name went while handles
	// were open on it, for their Stat and reads, until the last closes.
	handles map[uint64]int
	orphans map[uint64]inode

	// spare keeps the emptied data files of gone inodes for new ones
	// (spares.go); nil when read only.
	spare *spares
	// lent holds the draft inodes whose data file was lent out by
	// BackingFile: the kernel may read it after every handle closed, so
	// it is never emptied for reuse, only unlinked.
	lent sync.Map // uint64 -> struct{}

	// bornMu protects born, which may be read with or without d.mu held;
	// taken last. born maps the disk inode numbers draft inodes kept to
	// the births of the objects they were copied up from (identity.go).
	bornMu sync.Mutex
	born   map[uint64]int64
	// pins counts, by disk number, the handles open on a disk object
	// shown under a number of its own because born holds that disk
	// number; gone holds those of the pinned births whose inode went,
	// forgotten when the last pin goes (see pinBirth). Under bornMu.
	pins map[uint64]int
	gone map[uint64]bool

	// memo keeps per-path answers of status and commit (status_memo.go).
	memo memo
	// owners keeps newOwner's answers by directory while a commit is
	// prepared, with mu held for writing: it asks for each path more
	// than once. nil otherwise.
	owners ownerCache
	// committing is the id of the commit writing to the disk with
	// readers let in (see draftLock), 0 when none.
	committing atomic.Uint64
}

func openDraft(w *Workspace, name, dir string) (*Draft, error) {
	d := &Draft{w: w, name: name, dir: dir, data: -1, writers: map[uint64]int{}, ctimes: map[string]int64{}, ctimeOnly: map[uint64]struct{}{},
		handles: map[uint64]int{}, orphans: map[uint64]inode{}, born: map[uint64]int64{},
		pins: map[uint64]int{}, gone: map[uint64]bool{}}
	if !w.readOnly {
		for _, sub := range []string{"data", "blobs", "undo"} {
			if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
				return nil, fmt.Errorf("overlay: draft %s: %w%s", name, err, fullHint(dir, err))
			}
		}
	}
	data, err := unix.Open(filepath.Join(dir, "data"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	switch {
	case err == nil:
		d.data = data
	case w.readOnly && errors.Is(err, unix.ENOENT):
		// Read only, a draft never written: nothing to open.
	default:
		return nil, fmt.Errorf("overlay: draft %s: open its data directory: %w", name, err)
	}
	if !w.readOnly {
		if d.spare, err = openSpares(dir); err != nil {
			d.closeData()
			return nil, fmt.Errorf("overlay: draft %s: %w", name, err)
		}
	}
	if d.st, err = openStore(dir, w.readOnly); err != nil {
		d.closeData()
		return nil, err
	}
	if d.tl, err = openTimeline(d, w.quiet); err != nil {
		d.st.close()
		d.closeData()
		return nil, err
	}
	steps := []func() error{d.reload, d.recover, d.recoverRewind, d.collectGarbage}
	if w.readOnly {
		// Finishing a commit and collecting garbage write: a read-only
		// open shows the draft as it is.
		steps = steps[:1]
	}
	for _, step := range steps {
		if err := step(); err != nil {
			d.st.close()
			d.closeData()
			return nil, err
		}
	}
	if !w.readOnly {
		d.tl.watch()
	}
	return d, nil
}

func (d *Draft) closeData() {
	d.spare.close() // first: see spares.close
	if d.data >= 0 {
		unix.Close(d.data)
	}
}

// reload replaces the in-memory metadata with the stored one.
func (d *Draft) reload() error {
	snap, err := d.st.load()
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.entries = snap.entries
	d.inodes = snap.inodes
	d.nextIno = snap.nextIno
	d.noteBirths(d.inodes)
	d.children = map[string]map[string]struct{}{}
	d.below = map[string]int{}
	d.subdirs = map[string]int{}
	d.links = map[uint64]int{}
	for k, e := range d.entries {
		d.indexEntry(k)
		d.countSubdir(k, e, 1)
		if e.Ino != 0 {
			if _, ok := d.inodes[e.Ino]; !ok {
				return fmt.Errorf("overlay: %s: entry %q names missing inode %d: %w (move the file away to start an empty draft)", d.st.path, k, e.Ino, ErrCorrupt)
			}
			d.links[e.Ino]++
		}
	}
	return nil
}

// collectGarbage removes data files no inode owns (left by a crash
// between creating a file and recording it), or keeps numbered ones as
// spares.
func (d *Draft) collectGarbage() error {
	dataDir := filepath.Join(d.dir, "data")
	ents, err := os.ReadDir(dataDir)
	if err != nil {
		return fmt.Errorf("overlay: draft %s: %w", d.name, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	owned := map[string]bool{}
	for ino, n := range d.inodes {
		if n.Data && d.links[ino] > 0 {
			owned[n.dataName(ino)] = true
		}
	}
	for _, e := range ents {
		if owned[e.Name()] {
			continue
		}
		if f, ok := parseFileName(e.Name()); ok && e.Type().IsRegular() && d.spare.keep(f) {
			continue
		}
		os.Remove(filepath.Join(dataDir, e.Name()))
	}
	for name := range owned {
		if f, ok := parseFileName(name); ok {
			d.spare.seen(f)
		}
	}
	if _, err := d.gcLocked(false); err != nil {
		return err
	}
	for ino, n := range d.inodes {
		if d.links[ino] == 0 {
			// An inode no entry names any more: drop its record too.
			_ = d.st.write(&txn{inodes: map[uint64]*inode{ino: nil}})
			delete(d.inodes, ino)
			_ = n
		}
	}
	return nil
}

func (d *Draft) close() error {
	d.tl.close()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	ferr := d.flushCtimesLocked()
	d.closed = true
	err := d.st.close()
	d.closeData()
	return errors.Join(ferr, err)
}

// flushCtimes records the ctimes that moved in memory only (see
// ctimeOnly), which the draft's quiet period, an fsync and its close
// do: a crash before then shows the ctime of the inode's last record.
func (d *Draft) flushCtimes() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	return d.flushCtimesLocked()
}

// sync makes every acknowledged change of the draft durable on disk,
// the ctimes kept in memory for now too (an fsync through the mount).
func (d *Draft) sync() error {
	if err := d.flushCtimes(); err != nil {
		return err
	}
	return d.st.sync()
}

// flushCtimesLocked is flushCtimes with d.mu held for writing.
func (d *Draft) flushCtimesLocked() error {
	if len(d.ctimeOnly) == 0 {
		return nil
	}
	return d.apply(&txn{})
}

// logMark is a logged change's path and source.
type logMark struct {
	path    string
	src     Source
	capture uint64 // d.captures when it was logged
}

// Name is the draft's name.
func (d *Draft) Name() string { return d.name }

// Workspace is the workspace the draft is over.
func (d *Draft) Workspace() *Workspace { return d.w }

// dataPath is where the data file name lives (see inode.dataName).
func (d *Draft) dataPath(name string) string {
	return filepath.Join(d.dir, "data", name)
}

// dataName is the name of the data file of an inode numbered ino whose
// File is 0.
func dataName(ino uint64) string { return strconv.FormatUint(ino, 16) }

// dataName is the name of the data file of n, inode number ino.
func (n *inode) dataName(ino uint64) string {
	if n.File != 0 {
		return fileName(n.File)
	}
	return dataName(ino)
}

// byNumber is n as put back under its inode number's name (by an undo or a
// rewind, which make its data file there).
func byNumber(n *inode) *inode {
	if n.File == 0 {
		return n
	}
	c := *n
	c.File = 0
	return &c
}

// dataOf is the name of the data file of draft inode ino, named or
// orphaned. Must be called with d.mu held (for reading at least).
func (d *Draft) dataOf(ino uint64) string {
	if n, ok := d.inodes[ino]; ok {
		return n.dataName(ino)
	}
	d.filesMu.Lock()
	defer d.filesMu.Unlock()
	n := d.orphans[ino]
	return n.dataName(ino)
}

// openData opens the data file name (as os.OpenFile would its path).
func (d *Draft) openData(name string, flag int, perm fs.FileMode) (*os.File, error) {
	fd, err := d.openDataFd(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), d.dataPath(name)), nil
}

// openDataFd is openData's descriptor, without an os.File around it.
func (d *Draft) openDataFd(name string, flag int, perm fs.FileMode) (int, error) {
	for {
		fd, err := unix.Openat(d.data, name, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		switch err {
		case nil:
			return fd, nil
		case unix.EINTR:
			continue
		}
		return -1, &fs.PathError{Op: "open", Path: d.dataPath(name), Err: err}
	}
}

// mknodData makes the empty data file name, which must not exist.
func (d *Draft) mknodData(name string) error {
	for {
		err := unix.Mknodat(d.data, name, unix.S_IFREG|dataPerm, 0)
		if err != unix.EINTR {
			if err != nil {
				return &fs.PathError{Op: "mknod", Path: d.dataPath(name), Err: err}
			}
			return nil
		}
	}
}

// statData stats the data file name.
func (d *Draft) statData(name string, st *unix.Stat_t) error {
	if err := unix.Fstatat(d.data, name, st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "lstat", Path: d.dataPath(name), Err: err}
	}
	return nil
}

// indexEntry records a new entry at key in children and below. Must be
// called with d.mu held for writing.
func (d *Draft) indexEntry(key string) {
	for k := key; k != ""; {
		p := parentOf(k)
		d.below[p]++
		set := d.children[p]
		if set == nil {
			set = map[string]struct{}{}
			d.children[p] = set
		}
		set[baseOf(k)] = struct{}{}
		k = p
	}
}

// unindexEntry undoes indexEntry once the entry at key is gone from
// d.entries. Must be called with d.mu held for writing.
func (d *Draft) unindexEntry(key string) {
	for k := key; k != ""; {
		p := parentOf(k)
		if d.below[p]--; d.below[p] <= 0 {
			delete(d.below, p)
		}
		if _, ok := d.entries[k]; !ok && d.below[k] == 0 {
			if set := d.children[p]; set != nil {
				delete(set, baseOf(k))
				if len(set) == 0 {
					delete(d.children, p)
				}
			}
		}
		k = p
	}
}

// countSubdir adds sign times what the entry e at key changes in the
// number of subdirectories of key's directory: one more for a directory,
// one less for covering (removing, replacing, renaming away) a lower
// directory, as its base recorded when the draft first changed the
// path. Must be called with d.mu held for writing.
func (d *Draft) countSubdir(key string, e *entry, sign int) {
	w := 0
	if e.Kind == kindDir {
		w++
	}
	if b := e.Base; b != nil && b.Exists && !b.NoLower && b.Kind == kindDir {
		w--
	}
	if w == 0 {
		return
	}
	p := parentOf(key)
	if d.subdirs[p] += sign * w; d.subdirs[p] == 0 {
		delete(d.subdirs, p)
	}
}

// addWriter counts a handle open for writing on ino, whose data the
// next capture of the timeline reads again. Must be called with d.mu
// held for writing.
func (d *Draft) addWriter(ino uint64) {
	d.writers[ino]++
	d.touchIno(ino)
}

// touchIno marks inode ino, its record or its data file, for the next
// capture of the timeline (see Draft.touched). Must be called with d.mu
// held for writing.
func (d *Draft) touchIno(ino uint64) {
	if d.touchedInos != nil {
		d.touchedInos[ino] = struct{}{}
	}
}

// apply makes t durable and then applies it to memory. Must be called
// with d.mu held for writing.
func (d *Draft) apply(t *txn) error {
	if d.closed {
		return fmt.Errorf("overlay: draft %s is closed", d.name)
	}
	for ino := range d.ctimeOnly {
		if _, ok := t.inodes[ino]; !ok && d.inodes[ino] != nil {
			t.putInode(ino, d.inodes[ino])
		}
	}
	if err := d.st.write(t); err != nil {
		return fmt.Errorf("overlay: draft %s: record change: %w", d.name, err)
	}
	clear(d.ctimeOnly)
	for k, e := range t.entries {
		if d.touched != nil {
			d.touched[k] = struct{}{}
		}
		old, had := d.entries[k]
		if had && old.Ino != 0 {
			if d.links[old.Ino]--; d.links[old.Ino] <= 0 {
				delete(d.links, old.Ino)
			}
		}
		if had {
			d.countSubdir(k, old, -1)
		}
		if e == nil {
			if had {
				delete(d.entries, k)
				d.unindexEntry(k)
			}
			continue
		}
		d.entries[k] = e
		d.countSubdir(k, e, 1)
		if !had {
			d.indexEntry(k)
		}
		if e.Ino != 0 {
			d.links[e.Ino]++
		}
	}
	for ino, n := range t.inodes {
		d.touchIno(ino)
		if n == nil {
			delete(d.inodes, ino)
			continue
		}
		d.inodes[ino] = n
	}
	d.noteBirths(t.inodes)
	if t.nextIno != 0 {
		d.nextIno = t.nextIno
	}
	return nil
}
