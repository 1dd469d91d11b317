//go:build linux

package overlay

import (
	"os"

	"golang.org/x/sys/unix"
)

// allocIno reserves a new draft inode number in t. Must be called with
// d.mu held for writing.
func (d *Draft) allocIno(t *txn) uint64 {
	ino := d.nextIno
	if t.nextIno != 0 {
		ino = t.nextIno
	}
	t.nextIno = ino + 1
	return ino
}

// holdFile counts a handle open on inode number ino. Must be called with
// d.mu held (for reading at least), so a draft inode is still named.
func (d *Draft) holdFile(ino uint64) {
	d.filesMu.Lock()
	d.handles[ino]++
	d.filesMu.Unlock()
}

// releaseFile undoes holdFile when the handle closes; the data file of
// an orphan goes with its last handle.
func (d *Draft) releaseFile(ino uint64) {
	d.filesMu.Lock()
	defer d.filesMu.Unlock()
	if d.handles[ino]--; d.handles[ino] > 0 {
		return
	}
	delete(d.handles, ino)
	if n, ok := d.orphans[ino]; ok {
		delete(d.orphans, ino)
		d.forgetBirth(ino)
		if n.Data {
			// Under filesMu, so no copy-up can take the number meanwhile.
			d.removeData(ino, n.dataName(ino))
		}
	}
}

// orphan keeps n, an inode whose last name goes, for the handles still
// open on it, and reports whether there are any: then its data file
// stays until the last of them closes. Must be called with d.mu held
// for writing.
func (d *Draft) orphan(ino uint64, n *inode) bool {
	d.filesMu.Lock()
	defer d.filesMu.Unlock()
	if d.handles[ino] > 0 {
		d.orphans[ino] = *n
		return true
	}
	return false
}

// orphaned reports whether draft inode ino lives on only for the
// handles open on it.
func (d *Draft) orphaned(ino uint64) bool {
	d.filesMu.Lock()
	defer d.filesMu.Unlock()
	_, ok := d.orphans[ino]
	return ok
}

// copyAt identifies the data file of draft inode ino, named or
// orphaned, by the file's own inode number: 0 when there is none.
func (d *Draft) copyAt(ino uint64) uint64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.copyAtLocked(ino)
}

// copyAtLocked is copyAt for a caller holding d.mu.
func (d *Draft) copyAtLocked(ino uint64) uint64 {
	n, _, ok := d.inodeOfLocked(ino)
	var st unix.Stat_t
	if !ok || !n.Data || unix.Fstatat(d.data, n.dataName(ino), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return 0
	}
	return st.Ino
}

// inoFree reports whether a new draft inode may take number ino: no
// inode, named or orphaned, has it. Must be called with d.mu held.
func (d *Draft) inoFree(ino uint64) bool {
	if _, taken := d.inodes[ino]; taken || ino == 0 {
		return false
	}
	d.filesMu.Lock()
	defer d.filesMu.Unlock()
	_, orphaned := d.orphans[ino]
	return !orphaned
}

// inodeOf returns the metadata of a draft inode, named or orphaned, and
// its link count.
func (d *Draft) inodeOf(ino uint64) (inode, int, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.inodeOfLocked(ino)
}

// inodeOfLocked is inodeOf for a caller holding d.mu.
func (d *Draft) inodeOfLocked(ino uint64) (inode, int, bool) {
	if n, ok := d.inodes[ino]; ok {
		return *n, d.links[ino], true
	}
	d.filesMu.Lock()
	defer d.filesMu.Unlock()
	n, ok := d.orphans[ino]
	return n, 0, ok
}

// holds reports whether draft inode ino, named or orphaned, has the data
// file name.
func (d *Draft) holds(ino uint64, name string) bool {
	n, _, ok := d.inodeOf(ino)
	return ok && n.Data && n.dataName(ino) == name
}

// removeData removes the data file name of inode ino, which no name and
// no handle keeps: it becomes a spare (see spares) or goes.
func (d *Draft) removeData(ino uint64, name string) {
	if _, lent := d.lent.LoadAndDelete(ino); lent || d.spare == nil || !d.spare.retire(d.data, name) {
		os.Remove(d.dataPath(name))
	}
}
