//go:build linux

package overlay

import (
	"hash/fnv"

	"golang.org/x/sys/unix"
)

// A draft inode copied up from a disk file keeps the disk's inode number
// (see "Identity" in doc.go). Once the disk file goes, the disk may give
// that number to a new file at once (ext4 does): the new file is another
// object, and must not be taken for the draft's copy. What tells the two
// apart is recorded at copy-up in inode.Born: the disk file's birth time
// (statx), else its inode generation (FS_IOC_GETVERSION). A lower object
// whose number a draft inode holds but whose birth differs is shown under
// a number of its own (recycledIno). So is the very object the inode was
// copied from, where the view shows it beside its copy: the copy moved
// away and the name it left shows the disk again (a part of the draft
// discarded, or a commit of the copy's new name undone after a
// discard). The two are separate files in the view (a write to one
// leaves the other) and must not look like two names of one, which
// rename(2) would take for a no-op.

// fsIocGetVersion is FS_IOC_GETVERSION, _IOR('v', 1, long), which
// x/sys/unix lacks.
const fsIocGetVersion = 0x80087601

// diskBirth identifies the disk object at key among those that had its
// inode number; 0 when the file system tells neither. Resolved beneath
// the workspace, as every disk access.
func (w *Workspace) diskBirth(key string) int64 {
	if w.dir == nil {
		return 0
	}
	f, err := w.dir.Open(key, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return 0
	}
	var sx unix.Statx_t
	err = unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, unix.STATX_BTIME, &sx)
	f.Close()
	if err == nil && sx.Mask&unix.STATX_BTIME != 0 {
		return sx.Btime.Sec*1e9 + int64(sx.Btime.Nsec)
	}
	if f, err = w.dir.Open(key, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0); err != nil {
		return 0
	}
	defer f.Close()
	gen, err := unix.IoctlGetInt(int(f.Fd()), fsIocGetVersion)
	if err != nil {
		return 0
	}
	return int64(uint32(gen)) | 1<<62 // never a birth time in ns (until 2116)
}

// recycledIno is the number a lower object is shown under when a draft
// inode holds its disk number: stable for the object, in the range of
// synthetic numbers (see syntheticIno).
func recycledIno(ino uint64, birth int64) uint64 {
	h := fnv.New64a()
	var b [16]byte
	for i := range 8 {
		b[i], b[8+i] = byte(ino>>(8*i)), byte(uint64(birth)>>(8*i))
	}
	h.Write(b[:])
	return h.Sum64()>>2 | 1<<62
}

// noteBirths records the births of inodes in born, and forgets those of
// inodes gone (nil), unless handles still hold them. Must be called
// with d.mu held for writing.
func (d *Draft) noteBirths(inodes map[uint64]*inode) {
	for ino, n := range inodes {
		switch {
		case n != nil && n.Born != 0:
			d.bornMu.Lock()
			d.born[ino] = n.Born
			delete(d.gone, ino)
			d.bornMu.Unlock()
		case n == nil && !d.orphaned(ino):
			d.forgetBirth(ino)
		}
	}
}

// forgetBirth drops what born knows of a draft inode that is gone; a
// birth a handle pins is dropped when the last such handle closes.
func (d *Draft) forgetBirth(ino uint64) {
	d.bornMu.Lock()
	defer d.bornMu.Unlock()
	if d.pins[ino] > 0 {
		d.gone[ino] = true
		return
	}
	delete(d.born, ino)
}

// pinBirth is for a handle opened on the disk object with disk number
// disk, shown under number view (see distinct). When view is a number
// of the object's own, the birth that made it so stays known while the
// handle is open, also once the draft inode holding disk goes: the
// object keeps the number the handle has, so fstat, lstat and copy-up
// agree with the handle on it. It returns the disk number to
// unpinBirth when the handle closes; 0: none, born holds no birth of
// disk (any more).
func (d *Draft) pinBirth(disk, view uint64) uint64 {
	if disk == 0 || disk == view {
		return 0
	}
	d.bornMu.Lock()
	defer d.bornMu.Unlock()
	if _, ok := d.born[disk]; !ok {
		return 0
	}
	d.pins[disk]++
	return disk
}

// unpinBirth undoes pinBirth when the handle closes.
func (d *Draft) unpinBirth(disk uint64) {
	if disk == 0 {
		return
	}
	d.bornMu.Lock()
	defer d.bornMu.Unlock()
	if d.pins[disk]--; d.pins[disk] > 0 {
		return
	}
	delete(d.pins, disk)
	if d.gone[disk] {
		delete(d.gone, disk)
		delete(d.born, disk)
	}
}

// distinct gives i, what the disk holds at lowerPath and the view shows
// as it is, a number of its own when a draft inode holds its disk
// number: that inode is another object, or a copy of this one shown
// elsewhere.
func (d *Draft) distinct(i *fileInfo, lowerPath string) {
	d.bornMu.Lock()
	_, ok := d.born[i.attr.Ino]
	d.bornMu.Unlock()
	if !ok {
		return
	}
	if now := d.w.diskBirth(lowerPath); now != 0 {
		i.attr.Ino = recycledIno(i.attr.Ino, now)
	}
}

// birthOf is the birth to record for a draft inode that keeps the disk
// number of the object at lowerPath.
func (d *Draft) birthOf(lowerPath string) int64 {
	return d.w.diskBirth(lowerPath)
}
