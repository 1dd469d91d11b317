//go:build linux

package overlay

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

// Fs is a draft's merged view as an afero.Fs. Every change it makes is
// logged with its Source. Names are slash-separated and taken from the
// workspace root ("/a/b" and "a/b" are the same file); ".." never leaves
// the view, and a final symlink is followed only inside it.
//
// A name's elements before the last must not be symlinks: front ends
// resolve those first (the kernel's path walk for the mount, or
// [Draft.Resolve]). Fs does not follow them: a draft symlink there is
// ENOTDIR, and a disk symlink there is followed by the OS, wherever it
// points.
type Fs struct {
	d   *Draft
	src Source
}

var (
	_ afero.Fs        = (*Fs)(nil)
	_ afero.Symlinker = (*Fs)(nil)
)

// Fs returns the draft's merged view, logging changes as made by src.
func (d *Draft) Fs(src Source) *Fs { return &Fs{d: d, src: src} }

// As returns the view with its changes made by who within its source
// (see [Source.By]): a front end serving several processes or clients
// through one Fs takes one per request.
func (f *Fs) As(who string) *Fs { return &Fs{d: f.d, src: f.src.By(who)} }

// Draft is the draft the view is of.
func (f *Fs) Draft() *Draft { return f.d }

// Name implements afero.Fs.
func (f *Fs) Name() string { return "draftfs:" + f.d.name }

// Lstat describes name without following a final symlink.
func (f *Fs) Lstat(name string) (fs.FileInfo, error) {
	return f.d.lstat(clean(name))
}

// LstatMeta is Lstat for decisions on the type, mode and owner of
// name: a draft file's data file is not stat'ed, its size and times are
// left zero.
func (f *Fs) LstatMeta(name string) (fs.FileInfo, error) {
	d, key := f.d, clean(name)
	d.mu.RLock()
	p := d.peek(key)
	if p.ino != 0 {
		defer d.mu.RUnlock() // as in lstatListed
		return d.describeMeta(key, p)
	}
	d.mu.RUnlock()
	return d.describe(key, p)
}

// LstatIfPossible implements afero.Lstater.
func (f *Fs) LstatIfPossible(name string) (fs.FileInfo, bool, error) {
	fi, err := f.Lstat(name)
	return fi, true, err
}

// Stat describes name, following symlinks inside the view.
func (f *Fs) Stat(name string) (fs.FileInfo, error) {
	key, err := f.d.follow(clean(name))
	if err != nil {
		return nil, err
	}
	fi, err := f.d.lstat(key)
	if err != nil {
		return nil, err
	}
	if key != clean(name) {
		fi.(*fileInfo).name = path.Base("/" + clean(name))
	}
	return fi, nil
}

// peeked is what the draft's metadata says about a key, copied out so
// the disk can be asked without holding d.mu.
type peeked struct {
	w        where
	err      error
	ino      uint64 // the draft inode, 0 when the object is in the lower layers
	n        inode
	nlink    int
	implicit bool  // the draft has entries below key
	subdirs  int   // d.subdirs[key]
	ctime    int64 // d.ctimes[key]
	// listed, when set, is the disk's lstat of w.lower read with a
	// listing (see dirEntry), used instead of reading it again.
	listed fs.FileInfo
}

// file reports whether p found a draft file (one with a data file).
func (p *peeked) file() bool { return p.err == nil && p.ino != 0 && p.n.Data }

// peek must be called with d.mu held.
func (d *Draft) peek(key string) peeked {
	var p peeked
	p.w, p.err = d.locate(key)
	if p.err == nil && p.w.e != nil && !p.w.e.redirect() {
		p.ino = p.w.e.Ino
		p.n = *d.inodes[p.ino]
		p.nlink = d.links[p.ino]
	}
	p.implicit = d.below[key] > 0
	p.subdirs = d.subdirs[key]
	p.ctime = d.ctimes[key]
	return p
}

// lstat is the merged view's lstat of key.
func (d *Draft) lstat(key string) (fs.FileInfo, error) { return d.lstatListed(key, "", nil) }

// lstatListed is lstat with the disk's lstat of lower as a listing read
// it (see dirEntry), used if key still leads there.
func (d *Draft) lstatListed(key, lower string, listed fs.FileInfo) (fs.FileInfo, error) {
	d.mu.RLock()
	p := d.peek(key)
	if p.ino != 0 {
		// A draft object: its data file goes (a discard, a commit) only
		// with d.mu held, so it is described with d.mu held.
		defer d.mu.RUnlock()
		return d.describe(key, p)
	}
	d.mu.RUnlock()
	if listed != nil && p.w.hasLower && p.w.lower == lower {
		p.listed = listed
	}
	return d.describe(key, p)
}

// lstatLocked is lstat for callers holding d.mu.
func (d *Draft) lstatLocked(key string) (*fileInfo, error) {
	fi, err := d.describe(key, d.peek(key))
	if err != nil {
		return nil, err
	}
	return fi.(*fileInfo), nil
}

func (d *Draft) describe(key string, p peeked) (fs.FileInfo, error) {
	if p.err != nil {
		return nil, p.err
	}
	name := baseOf(key)
	if key == "" {
		name = "/"
	}
	if p.ino != 0 {
		fi, err := d.draftInfo(name, key, p.ino, &p.n, p.nlink)
		if err == nil && fi.IsDir() {
			lower := uint32(2)
			if p.w.hasLower { // a directory of the disk's, changed in the draft
				if lfi, err := d.diskLstat(p.w.lower); err == nil && lfi.IsDir() {
					lower = infoFrom(name, p.w.lower, lfi).attr.Nlink
				}
			}
			fi.attr.Nlink = dirLinks(lower, p.subdirs)
		}
		return fi, err
	}
	var fi *fileInfo
	var err error
	if p.listed != nil {
		fi, err = d.lowerInfo(name, p.w.lower, p.listed, nil)
	} else {
		fi, err = d.lowerStat(name, p.w.lower)
	}
	if err == nil && fi.IsDir() {
		fi.attr.Nlink = dirLinks(fi.attr.Nlink, p.subdirs)
	}
	if err == nil && p.w.e != nil && p.w.e.Ctime > fi.attr.Ctime.UnixNano() {
		fi.attr.Ctime = time.Unix(0, p.w.e.Ctime) // renamed in the draft
	}
	if err == nil && p.ctime > fi.attr.Ctime.UnixNano() {
		fi.attr.Ctime = time.Unix(0, p.ctime) // a chmod or chown that changed nothing
	}
	if err != nil && p.implicit && errors.Is(err, fs.ErrNotExist) {
		// The draft has entries below a directory the disk lost.
		now := time.Now()
		return &fileInfo{name: name, mode: fs.ModeDir | 0o755, mtime: now,
			attr: Attr{Ino: syntheticIno(key), Nlink: 2, Atime: now, Ctime: now}}, nil
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, &fs.PathError{Op: "lstat", Path: "/" + key, Err: pe.Err}
		}
		return nil, err
	}
	return fi, nil
}

// dirLinks is a merged directory's link count (2 and one per
// subdirectory) from its lower directory's, lower, and the draft's
// subdirectory count change in it. Where the disk does not count
// subdirectories (btrfs gives directories 1 link) the merged directory
// has 1 too, the convention for "not counted" that find(1) knows.
func dirLinks(lower uint32, subdirs int) uint32 {
	n := int64(lower) + int64(subdirs)
	if lower < 2 || n < 2 {
		return 1
	}
	return uint32(n)
}

// draftInfo describes a draft inode.
func (d *Draft) draftInfo(name, key string, ino uint64, n *inode, nlink int) (*fileInfo, error) {
	i := draftMeta(name, ino, n, nlink)
	switch {
	case n.Data:
		var st unix.Stat_t
		if err := d.statData(n.dataName(ino), &st); err != nil {
			return nil, &fs.PathError{Op: "lstat", Path: "/" + key, Err: errors.Unwrap(err)}
		}
		i.size, i.mtime = st.Size, time.Unix(st.Mtim.Unix())
		i.attr.Atime, i.attr.Ctime = time.Unix(st.Atim.Unix()), n.ctime(time.Unix(st.Ctim.Unix()))
		i.attr.Blocks = st.Blocks
		return i, nil
	case n.Mode.IsDir():
		i.size, i.attr.Nlink = 4096, 2
	case n.Mode&fs.ModeSymlink != 0:
		i.size = int64(len(n.Target))
	}
	i.mtime, i.attr.Atime, i.attr.Ctime = n.times()
	return i, nil
}

// draftMeta is what draftInfo knows of a draft inode without its data
// file: a file's size and times are left zero.
func draftMeta(name string, ino uint64, n *inode, nlink int) *fileInfo {
	return &fileInfo{name: name, mode: n.Mode, attr: Attr{Ino: ino, Nlink: uint32(nlink), Uid: uint32(n.Uid), Gid: uint32(n.Gid), Rdev: n.Rdev}}
}

// describeMeta is describe for decisions on the type, mode and owner of
// what key holds: a draft file's data file is not stat'ed, its size and
// times are left zero (SETATTR and opens for writing, four of the
// eleven stats of its data file a file tar creates would cost).
func (d *Draft) describeMeta(key string, p peeked) (fs.FileInfo, error) {
	if fi, ok := fileMetaOf(key, p); ok {
		return fi, nil
	}
	return d.describe(key, p)
}

// fileMetaOf is draftMeta of the draft file p found at key, false when
// p is not one.
func fileMetaOf(key string, p peeked) (*fileInfo, bool) {
	if !p.file() {
		return nil, false
	}
	return draftMeta(baseOf(key), p.ino, &p.n, p.nlink), true
}

// times are the mtime, atime and ctime of an inode without Data.
func (n *inode) times() (mtime, atime, ctime time.Time) {
	mtime, atime, ctime = time.Unix(0, n.Mtime), time.Unix(0, n.Mtime), time.Unix(0, n.Mtime)
	if n.Atime != 0 {
		atime = time.Unix(0, n.Atime)
	}
	if n.Ctime != 0 {
		ctime = time.Unix(0, n.Ctime)
	}
	return mtime, atime, ctime
}

// ctime is the ctime of an inode with Data whose data file has ctime
// data: the later of the two. The inode's own changes (chmod, chown,
// link, rename, xattr) are recorded in n.Ctime and leave the data file
// alone (moving its ctime took a system call that journals its inode,
// two a file tar makes); writes, truncates and times move the data
// file's. Both read the same clock; where the data directory's file
// system stamps coarsely, a write within one tick of a chmod shows the
// chmod's ctime, as two changes in one tick show one ctime on such a
// disk.
func (n *inode) ctime(data time.Time) time.Time {
	if own := time.Unix(0, n.Ctime); n.Ctime != 0 && own.After(data) {
		return own
	}
	return data
}

// maxSymlinks is how many symlinks one lookup follows before ELOOP.
const maxSymlinks = 40

// follow resolves symlinks at the end of key, inside the view: a target
// that leaves the workspace is refused with ErrOutside. A symlink's
// target is resolved in every element, as a lookup does; so is a key
// the lookup cannot find as given (a symlink among its directories that
// the draft made, or one on disk the draft's entries are behind). Keys
// from the mount and from Resolve need neither: the lookup costs one
// peek, as before.
func (d *Draft) follow(key string) (string, error) {
	link, err := d.symlinkAt(key)
	if err != nil {
		return d.resolveLinks(key)
	}
	if !link {
		return key, nil
	}
	target, err := d.readlink(key)
	if err != nil {
		return "", err
	}
	next, err := d.linkTarget(key, target)
	if err != nil {
		return "", err
	}
	return d.resolveLinks(next)
}

// isSymlink reports whether key is a symlink in the view; a draft
// object's type is known without asking the disk.
func (d *Draft) isSymlink(key string) bool {
	link, _ := d.symlinkAt(key)
	return link
}

// symlinkAt is isSymlink with the lookup's error, if it failed.
func (d *Draft) symlinkAt(key string) (bool, error) {
	d.mu.RLock()
	p := d.peek(key)
	d.mu.RUnlock()
	if p.err != nil {
		return false, p.err
	}
	if p.ino != 0 {
		return p.n.Mode&fs.ModeSymlink != 0, nil
	}
	fi, err := d.lowerStat(baseOf(key), p.w.lower)
	if err != nil {
		return false, err
	}
	return fi.Mode()&fs.ModeSymlink != 0, nil
}

// linkTarget is the key a symlink at key points to, if inside the view.
func (d *Draft) linkTarget(key, target string) (string, error) {
	if path.IsAbs(target) {
		rel, err := d.w.Rel(target)
		if err != nil {
			return "", &fs.PathError{Op: "follow", Path: "/" + key, Err: ErrOutside}
		}
		return rel, nil
	}
	rel := path.Clean(path.Join(parentOf(key), target))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", &fs.PathError{Op: "follow", Path: "/" + key, Err: ErrOutside}
	}
	if rel == "." {
		rel = ""
	}
	return rel, nil
}

// Resolve turns a path from an agent-facing caller into a key of the
// view, refusing paths outside the workspace and symlinks (in any
// element) that lead out of it. The path need not exist.
func (d *Draft) Resolve(p string) (string, error) {
	key, err := d.w.Rel(p)
	if err != nil {
		return "", err
	}
	return d.resolveLinks(key)
}

// resolveLinks resolves the symlinks in every element of key, as the
// view shows them, each of which must stay inside the workspace.
func (d *Draft) resolveLinks(key string) (string, error) {
	return d.walkLinks(key, func(k string) (bool, error) { return d.isSymlink(k), nil }, d.readlink)
}

// walkLinks resolves the symlinks in every element of key, as isLink
// and readlink see them, each of which must stay inside the workspace.
func (d *Draft) walkLinks(key string, isLink func(string) (bool, error), readlink func(string) (string, error)) (string, error) {
	var done string
	rest := key
	for hops := 0; rest != ""; {
		elem, tail, _ := strings.Cut(rest, "/")
		next := join(done, elem)
		link, err := isLink(next)
		if err != nil {
			return "", err
		}
		if !link {
			done, rest = next, tail
			continue
		}
		if hops++; hops > maxSymlinks {
			return "", pathErr("resolve", key, syscall.ELOOP)
		}
		target, err := readlink(next)
		if err != nil {
			return "", err
		}
		to, err := d.linkTarget(next, target)
		if err != nil {
			return "", err
		}
		done, rest = "", join(to, tail)
	}
	return done, nil
}

// Readlink returns a symlink's target.
func (f *Fs) Readlink(name string) (string, error) { return f.d.readlink(clean(name)) }

// ReadlinkIfPossible implements afero.LinkReader.
func (f *Fs) ReadlinkIfPossible(name string) (string, error) { return f.Readlink(name) }

func (d *Draft) readlink(key string) (string, error) {
	d.mu.RLock()
	p := d.peek(key)
	d.mu.RUnlock()
	return d.readlinkPeeked(key, p)
}

func (d *Draft) readlinkPeeked(key string, p peeked) (string, error) {
	if p.err != nil {
		return "", p.err
	}
	if p.ino != 0 {
		if p.n.Mode&fs.ModeSymlink == 0 {
			return "", pathErr("readlink", key, syscall.EINVAL)
		}
		return p.n.Target, nil
	}
	fi, err := d.lowerStat(baseOf(key), p.w.lower)
	if err != nil {
		return "", err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return "", pathErr("readlink", key, syscall.EINVAL)
	}
	return d.readlinkLower(p.w.lower)
}
