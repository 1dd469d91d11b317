//go:build linux

package overlay

import (
	"bytes"
	"errors"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/buffers"
)

// Attr is the part of a merged-view file's metadata that fs.FileInfo has
// no field for. FileInfo.Sys of every info this package returns is *Attr.
type Attr struct {
	Ino    uint64
	Nlink  uint32
	Uid    uint32
	Gid    uint32
	Atime  time.Time
	Ctime  time.Time
	Blocks int64
	Rdev   uint64
}

// fileInfo is the fs.FileInfo of the merged view.
type fileInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
	attr  Attr
}

func (i *fileInfo) Name() string       { return i.name }
func (i *fileInfo) Size() int64        { return i.size }
func (i *fileInfo) Mode() fs.FileMode  { return i.mode }
func (i *fileInfo) ModTime() time.Time { return i.mtime }
func (i *fileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i *fileInfo) Sys() any           { return &i.attr }

// infoFrom converts a disk layer's info, keeping what the OS told.
func infoFrom(name, lowerPath string, fi fs.FileInfo) *fileInfo {
	i := &fileInfo{name: name, size: fi.Size(), mode: fi.Mode(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		i.attr = Attr{
			Ino: st.Ino, Nlink: uint32(st.Nlink), Uid: st.Uid, Gid: st.Gid,
			Atime:  timeOf(st.Atim),
			Ctime:  timeOf(st.Ctim),
			Blocks: st.Blocks, Rdev: st.Rdev,
		}
		return i
	}
	i.attr = Attr{Ino: syntheticIno(lowerPath), Nlink: 1, Uid: uint32(selfUID), Gid: uint32(selfGID), Atime: i.mtime, Ctime: i.mtime}
	if i.mode.IsDir() {
		i.attr.Nlink = 2
	}
	return i
}

// syntheticIno numbers lower objects of a disk layer that has no inode
// numbers (afero's MemMapFs in tests): stable per lower path, below the
// draft's own range.
func syntheticIno(lowerPath string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(lowerPath))
	return h.Sum64()>>2 | 1<<62
}

// dirtyBuffer returns the unsaved editor text at a lower path, if any.
func (d *Draft) dirtyBuffer(lowerPath string) (buffers.Snapshot, bool) {
	if lowerPath == "" {
		return buffers.Snapshot{}, false
	}
	s, ok := d.w.bufs.Get(lowerPath)
	if !ok || !s.Dirty {
		return buffers.Snapshot{}, false
	}
	return s, true
}

// lowerStat describes what the lower layers hold at lowerPath (a dirty
// buffer over the disk), named name. Never follows a final symlink.
func (d *Draft) lowerStat(name, lowerPath string) (*fileInfo, error) {
	fi, err := d.diskLstat(lowerPath)
	return d.lowerInfo(name, lowerPath, fi, err)
}

// lowerInfo is lowerStat with the disk's lstat of lowerPath given.
func (d *Draft) lowerInfo(name, lowerPath string, fi fs.FileInfo, err error) (*fileInfo, error) {
	if s, ok := d.dirtyBuffer(lowerPath); ok && (err != nil || !fi.IsDir()) {
		i := &fileInfo{name: name, size: int64(len(s.Text)), mode: 0o644, mtime: s.Modified}
		if err == nil {
			i = infoFrom(name, lowerPath, fi)
			d.distinct(i, lowerPath)
			i.size, i.mtime = int64(len(s.Text)), s.Modified
			i.mode = fi.Mode().Perm()
		} else {
			i.attr = Attr{Ino: syntheticIno(lowerPath), Nlink: 1, Uid: uint32(selfUID), Gid: uint32(selfGID), Atime: s.Modified, Ctime: s.Modified}
		}
		return i, nil
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && d.bufferAbove(lowerPath) {
			return nil, pathErr("lstat", lowerPath, syscall.ENOTDIR)
		}
		if errors.Is(err, fs.ErrNotExist) && len(d.w.bufs.Children(lowerPath)) > 0 {
			// A directory the editor has a new file in, not saved yet.
			now := time.Now()
			return &fileInfo{name: name, mode: fs.ModeDir | 0o755, mtime: now,
				attr: Attr{Ino: syntheticIno(lowerPath), Nlink: 2, Uid: uint32(selfUID), Gid: uint32(selfGID), Atime: now, Ctime: now}}, nil
		}
		return nil, err
	}
	i := infoFrom(name, lowerPath, fi)
	d.distinct(i, lowerPath)
	return i, nil
}

// bufferAbove reports whether a parent of lowerPath is a file that only
// an editor buffer holds: then lowerPath is below a file.
func (d *Draft) bufferAbove(lowerPath string) bool {
	for q := parentOf(lowerPath); q != ""; q = parentOf(q) {
		if _, ok := d.dirtyBuffer(q); ok {
			_, err := d.diskLstat(q)
			return errors.Is(err, fs.ErrNotExist)
		}
	}
	return false
}

// diskLstat stats a disk path without following a final symlink. On the
// OS disk layer it resolves the path beneath the workspace directory
// (see [beneath] and [Draft.throughLinks]).
func (d *Draft) diskLstat(p string) (fs.FileInfo, error) {
	if d.w.osDisk {
		var fi fs.FileInfo
		err := d.throughLinks(p, func(p string) (err error) {
			fi, err = d.w.dir.Lstat(p)
			return err
		})
		return fi, err
	}
	return lstatDisk(d.w.disk, p)
}

// diskOpen opens a disk path beneath the workspace, not following a
// final symlink (ELOOP): the merged view resolves those itself.
func (d *Draft) diskOpen(p string, flag int) (afero.File, error) {
	var f afero.File
	err := d.throughLinks(p, func(p string) (err error) {
		f, err = d.w.disk.OpenFile(diskName(p), flag, 0)
		return err
	})
	return f, err
}

// throughLinks runs op on a lower path. The disk layer follows no
// symlink, so when a directory on the way is one (ELOOP), the path is
// resolved on disk as the kernel would, except that every symlink must
// stay inside the workspace, and op runs once more on the result: what
// is opened is then what was resolved, and a swap in between fails
// instead of leading out.
func (d *Draft) throughLinks(p string, op func(p string) error) error {
	err := op(p)
	if !errors.Is(err, syscall.ELOOP) || parentOf(p) == "" {
		return err
	}
	dir, rerr := d.realDir(parentOf(p))
	if rerr != nil {
		return rerr
	}
	if dir == parentOf(p) {
		return err // the final element is the symlink
	}
	return op(join(dir, baseOf(p)))
}

// realDir resolves the symlinks of a disk directory path, each inside
// the workspace (else ErrOutside).
func (d *Draft) realDir(p string) (string, error) {
	isLink := func(k string) (bool, error) {
		fi, err := lstatDisk(d.w.disk, k)
		return err == nil && fi.Mode()&fs.ModeSymlink != 0, err
	}
	return d.walkLinks(p, isLink, d.readlinkDisk)
}

// lstatDisk stats a disk path without following a final symlink.
func lstatDisk(disk afero.Fs, p string) (fs.FileInfo, error) {
	if l, ok := disk.(afero.Lstater); ok {
		fi, _, err := l.LstatIfPossible(diskName(p))
		return fi, err
	}
	return disk.Stat(diskName(p))
}

// diskName turns a workspace key into a name for the disk layer.
func diskName(key string) string { return "/" + key }

// readLower returns the whole content the lower layers hold at a path
// that is a regular file (or a dirty buffer), and the buffer version it
// came from (0 for disk).
func (d *Draft) readLower(lowerPath string) ([]byte, int64, error) {
	if s, ok := d.dirtyBuffer(lowerPath); ok {
		return s.Text, s.Version, nil
	}
	var b []byte
	err := d.throughLinks(lowerPath, func(p string) (err error) {
		b, err = afero.ReadFile(d.w.disk, diskName(p))
		return err
	})
	return b, 0, err
}

// openLower opens the lower content at a path that is a regular file.
func (d *Draft) openLower(lowerPath string) (io.ReadCloser, int64, error) {
	if s, ok := d.dirtyBuffer(lowerPath); ok {
		return io.NopCloser(bytes.NewReader(s.Text)), s.Version, nil
	}
	f, err := d.diskOpen(lowerPath, os.O_RDONLY|syscall.O_NONBLOCK)
	return f, 0, err
}

// readlinkLower reads a lower symlink.
func (d *Draft) readlinkLower(lowerPath string) (string, error) {
	var t string
	err := d.throughLinks(lowerPath, func(p string) (err error) {
		t, err = d.readlinkDisk(p)
		return err
	})
	return t, err
}

// readlinkDisk reads a disk symlink.
func (d *Draft) readlinkDisk(p string) (string, error) {
	if r, ok := d.w.disk.(afero.LinkReader); ok {
		return r.ReadlinkIfPossible(diskName(p))
	}
	return "", pathErr("readlink", p, syscall.EINVAL)
}

// lowerExists reports whether anything shows at lowerPath in the lower
// layers.
func (d *Draft) lowerExists(lowerPath string) (bool, error) {
	_, err := d.lowerStat(baseOf(lowerPath), lowerPath)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return false, nil
	}
	return false, err
}

func timeOf(ts syscall.Timespec) time.Time { return time.Unix(ts.Unix()) }
