//go:build linux

package overlay

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/draftfs/draftfs/overlay/beneath"
)

// dirEntry is one name of a merged directory listing.
type dirEntry struct {
	name string
	typ  fs.FileMode
	d    *Draft
	key  string
	// listed is the disk object's lstat read with the listing (nil when
	// none was), of lower path lower, while the feed's count was seq.
	// It describes the entry as long as the feed published nothing
	// since: every change to the view, a disk change included, is
	// published before any mount drops its caches of it, so an answer
	// built from it is never older than what the kernel last dropped.
	listed fs.FileInfo
	lower  string
	seq    uint64
}

func (e *dirEntry) Name() string      { return e.name }
func (e *dirEntry) IsDir() bool       { return e.typ.IsDir() }
func (e *dirEntry) Type() fs.FileMode { return e.typ }
func (e *dirEntry) String() string    { return fs.FormatDirEntry(e) }

// Info describes the entry now, from the listing's lstat when nothing
// changed since: one system call saved per name, and a path walk.
func (e *dirEntry) Info() (fs.FileInfo, error) {
	if e.listed != nil && e.d.w.feed.seq.Load() == e.seq {
		return e.d.lstatListed(e.key, e.lower, e.listed)
	}
	return e.d.lstat(e.key)
}

// InfoMeta is Info where the type, mode, owner and inode number are
// enough: a draft file is described from the draft's records, its size
// and times left zero, without a system call (see Fs.LstatMeta).
func (e *dirEntry) InfoMeta() (fs.FileInfo, error) {
	d := e.d
	d.mu.RLock()
	fi, ok := fileMetaOf(e.key, d.peek(e.key))
	d.mu.RUnlock()
	if !ok {
		return e.Info()
	}
	return fi, nil
}

// ReadDir lists a directory of the view, sorted by name: the draft's
// entries over the lower directory's, without whiteouts.
func (f *Fs) ReadDir(name string) ([]fs.DirEntry, error) {
	return f.d.readDirFollowing(clean(name), false)
}

// ReadDirPlus is ReadDir for callers that describe every entry (a mount
// answering READDIRPLUS): the listing reads each disk name's metadata
// from the open directory, one fstatat per name where Info would walk the
// name's whole path again (three system calls).
func (f *Fs) ReadDirPlus(name string) ([]fs.DirEntry, error) {
	return f.d.readDirFollowing(clean(name), true)
}

// Published counts the changes published on the view's change feed.
// Every change to the view, one made on disk included where the disk is
// watched, is published before a mount drops what it cached of it, so a
// listing read while the count was n is still the directory's while
// the count is n.
func (f *Fs) Published() uint64 { return f.d.w.feed.seq.Load() }

// readDirFollowing lists key, or what it leads to if it is a symlink
// (or below one only the draft has). Such a key cannot be listed as it
// is (the draft's symlink is not a directory, the disk's is not opened
// through), so a key that lists is listed without resolving it first,
// which would lstat it on disk once more for every listing.
func (d *Draft) readDirFollowing(key string, plus bool) ([]fs.DirEntry, error) {
	if l, err := d.readDir(key, plus); err == nil {
		return l, nil
	}
	key, err := d.follow(key)
	if err != nil {
		return nil, err
	}
	return d.readDir(key, plus)
}

// draftChild is a name a directory's draft entries give it: an entry
// (kind set) or a directory with entries below it but none of its own
// (kind 0), which shows only where the lower layers lost it.
type draftChild struct {
	name string
	kind kind
	typ  fs.FileMode
}

func (d *Draft) readDir(key string, plus bool) ([]fs.DirEntry, error) {
	d.mu.RLock()
	w, err, own := d.peekDir(key)
	d.mu.RUnlock()
	return d.listDir(key, w, err, own, plus)
}

// peekDir must be called with d.mu held.
func (d *Draft) peekDir(key string) (where, error, []draftChild) {
	w, err := d.locate(key)
	var own []draftChild
	if err == nil {
		if w.e != nil && w.e.Kind != kindDir {
			err = pathErr("readdir", key, syscall.ENOTDIR)
		}
		for name := range d.children[key] {
			e := d.entries[join(key, name)]
			if e == nil {
				own = append(own, draftChild{name: name, typ: fs.ModeDir})
				continue
			}
			c := draftChild{name: name, kind: e.Kind}
			if e.Ino != 0 {
				c.typ = d.inodes[e.Ino].Mode.Type()
			} else if e.Kind == kindDir {
				c.typ = fs.ModeDir
			} else if e.Kind == kindSymlink {
				c.typ = fs.ModeSymlink
			} else if e.Kind == kindSpecial {
				// A renamed lower special file: which type, only the
				// disk says (rare, so asked here).
				if fi, err := d.lowerStat(name, e.Origin); err == nil {
					c.typ = fi.Mode().Type()
				}
			}
			own = append(own, c)
		}
	}
	return w, err, own
}

// listDir merges a directory's lower listing with the draft's entries;
// plus reads the disk entries' metadata with it (see ReadDirPlus).
func (d *Draft) listDir(key string, w where, err error, own []draftChild, plus bool) ([]fs.DirEntry, error) {
	implicit := len(own) > 0
	if err != nil {
		return nil, err
	}
	seq := d.w.feed.seq.Load() // before the disk is read
	var merged map[string]fs.FileMode
	var listed map[string]fs.FileInfo
	if w.hasLower {
		var err error
		merged, listed, err = d.listLower(w.lower, len(own), plus)
		if errors.Is(err, fs.ErrNotExist) && !implicit && w.e == nil {
			// A file only an editor has, or a path below one.
			if _, serr := d.lowerStat(baseOf(w.lower), w.lower); serr == nil || errors.Is(serr, syscall.ENOTDIR) {
				return nil, pathErr("readdir", key, syscall.ENOTDIR)
			}
		}
		if err != nil && !(implicit || w.e != nil) {
			return nil, &fs.PathError{Op: "readdir", Path: "/" + key, Err: errors.Unwrap(err)}
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if merged == nil {
		merged = make(map[string]fs.FileMode, len(own))
	}
	for _, c := range own {
		switch c.kind {
		case kindWhiteout:
			delete(merged, c.name)
		case 0:
			if _, ok := merged[c.name]; !ok {
				merged[c.name] = c.typ
			}
		default:
			merged[c.name] = c.typ
		}
	}
	out := make([]fs.DirEntry, 0, len(merged))
	ents := make([]dirEntry, 0, len(merged)) // one allocation for all
	for name, typ := range merged {
		ents = append(ents, dirEntry{name: name, typ: typ, d: d, key: join(key, name)})
		e := &ents[len(ents)-1]
		if fi := listed[name]; fi != nil {
			e.listed, e.lower, e.seq = fi, e.key, seq
			if w.lower != key {
				e.lower = join(w.lower, name)
			}
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// listLower lists the lower directory's names and types: the disk's, and
// files that exist only as unsaved editor buffers, in a map with room
// for extra more; and, with plus, what the disk said of its names (see
// listDisk).
func (d *Draft) listLower(lower string, extra int, plus bool) (map[string]fs.FileMode, map[string]fs.FileInfo, error) {
	inEditor := d.w.bufs.Children(lower)
	m, listed, err := d.listDisk(lower, extra+len(inEditor), plus)
	if err != nil && !(errors.Is(err, fs.ErrNotExist) && len(inEditor) > 0) {
		return nil, nil, err
	}
	if m == nil {
		m = make(map[string]fs.FileMode, extra+len(inEditor))
	}
	for name, isDir := range inEditor {
		if _, ok := m[name]; !ok {
			m[name] = 0
			if isDir {
				m[name] = fs.ModeDir
			}
		}
	}
	return m, listed, nil
}

// listDisk lists the disk directory's names and types, in a map with
// room for extra more; and, with plus and the directory open by
// descriptor, each name's lstat.
func (d *Draft) listDisk(lower string, extra int, plus bool) (map[string]fs.FileMode, map[string]fs.FileInfo, error) {
	f, err := d.diskOpen(lower, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	id := d.committing.Load()
	rd, ok := f.(fs.ReadDirFile)
	if !ok {
		infos, err := f.Readdir(-1)
		if err != nil {
			return nil, nil, err
		}
		m := make(map[string]fs.FileMode, len(infos)+extra)
		for _, fi := range infos {
			if !commitTemp(fi.Name(), id) {
				m[fi.Name()] = fi.Mode().Type()
			}
		}
		return m, nil, nil
	}
	ents, err := rd.ReadDir(-1)
	if err != nil {
		return nil, nil, err
	}
	m := make(map[string]fs.FileMode, len(ents)+extra)
	var listed map[string]fs.FileInfo
	var dir *os.File // where the names are described from
	if plus {
		listed = make(map[string]fs.FileInfo, len(ents))
		dir, _ = f.(*os.File)
	}
	for _, e := range ents {
		if commitTemp(e.Name(), id) {
			continue
		}
		m[e.Name()] = e.Type()
		if dir == nil {
			continue
		}
		if fi, err := beneath.LstatAt(dir, e.Name()); err == nil {
			listed[e.Name()] = fi
		}
	}
	return m, listed, nil
}

// dirFile is an open directory. Its listing is read on first use and
// kept, so offsets stay stable for the life of the handle.
type dirFile struct {
	name string
	key  string
	d    *Draft
	info fs.FileInfo // at open, for Stat once the directory moved or went

	mu     sync.Mutex // protects the following
	list   []fs.DirEntry
	loaded bool
	pos    int
	closed bool
}

func (f *dirFile) load() error {
	if f.loaded {
		return nil
	}
	l, err := f.d.readDir(f.key, false)
	if err != nil {
		return err
	}
	f.list, f.loaded = l, true
	return nil
}

// ReadDir implements fs.ReadDirFile.
func (f *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.load(); err != nil {
		return nil, err
	}
	rest := f.list[f.pos:]
	if n <= 0 {
		f.pos = len(f.list)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	if n > len(rest) {
		n = len(rest)
	}
	f.pos += n
	return rest[:n], nil
}

func (f *dirFile) Readdir(n int) ([]fs.FileInfo, error) {
	ents, err := f.ReadDir(n)
	infos := make([]fs.FileInfo, 0, len(ents))
	for _, e := range ents {
		fi, ierr := e.Info()
		if ierr != nil {
			continue // removed since the listing was read
		}
		infos = append(infos, fi)
	}
	return infos, err
}

func (f *dirFile) Readdirnames(n int) ([]string, error) {
	ents, err := f.ReadDir(n)
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, err
}

func (f *dirFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return badHandle("close", f.name)
	}
	f.closed = true
	f.d.releaseFile(f.info.Sys().(*Attr).Ino)
	return nil
}

// Stat describes the directory open, which may no longer be at its name.
func (f *dirFile) Stat() (fs.FileInfo, error) { return named(f.name)(f.stat()) }

func (f *dirFile) stat() (fs.FileInfo, error) {
	ino := f.info.Sys().(*Attr).Ino
	if fi, err := f.d.lstat(f.key); err == nil && fi.Sys().(*Attr).Ino == ino {
		return fi, nil
	}
	if n, nlink, ok := f.d.inodeOf(ino); ok && n.Mode.IsDir() { // moved, or removed (orphaned)
		return f.d.draftInfo(baseOf(f.key), f.key, ino, &n, nlink)
	}
	return f.info, nil
}

// Seek to 0 rereads the directory; other offsets are refused.
func (f *dirFile) Seek(offset int64, whence int) (int64, error) {
	if offset != 0 || whence != io.SeekStart {
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: syscall.EINVAL}
	}
	f.mu.Lock()
	f.loaded, f.list, f.pos = false, nil, 0
	f.mu.Unlock()
	return 0, nil
}

func (f *dirFile) Name() string                      { return f.name }
func (f *dirFile) Sync() error                       { return nil }
func (f *dirFile) Read([]byte) (int, error)          { return 0, f.isDir("read") }
func (f *dirFile) ReadAt([]byte, int64) (int, error) { return 0, f.isDir("read") }

// A directory is open read only: writing is EBADF, truncating EINVAL, as
// on a directory descriptor.
func (f *dirFile) Write([]byte) (int, error)          { return 0, badHandle("write", f.name) }
func (f *dirFile) WriteAt([]byte, int64) (int, error) { return 0, badHandle("write", f.name) }
func (f *dirFile) WriteString(string) (int, error)    { return 0, badHandle("write", f.name) }
func (f *dirFile) Truncate(int64) error {
	return &fs.PathError{Op: "truncate", Path: f.name, Err: syscall.EINVAL}
}

func (f *dirFile) isDir(op string) error {
	return &fs.PathError{Op: op, Path: f.name, Err: syscall.EISDIR}
}
