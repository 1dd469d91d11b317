//go:build linux

package overlay

import (
	"bytes"
	"os"
)

// same reports whether an item changes nothing: the draft holds at its
// path what the lower layers held when the agent first changed it (a
// touch, a sed that matched nothing, a checkout back to the same
// content), or what the user has there now (both made the same change).
// Type, permission bits, owner, content and user xattrs count;
// timestamps do not. Status, diff and commit leave such items out. It
// reads the draft's data files and the lower layers, not the draft's
// maps: n is the item's inode, copied under d.mu.
func (d *Draft) same(it item, n *inode) bool {
	e := &it.e
	if it.from != "" || e.Base == nil || e.Base.NoLower {
		return false
	}
	lower := e.Base.Path
	switch {
	case e.Kind == kindWhiteout:
		ok, _ := d.lowerExists(lower)
		return !ok // the user deleted it too
	case e.redirect():
		// Renamed back to where it came from: the lower object itself.
		ok, _ := d.lowerExists(lower)
		return ok
	case n == nil:
		return false
	}
	if !d.sameXattrs(it.key, lower, n) {
		return false
	}
	now, err := d.lowerStat(baseOf(lower), lower)
	if err == nil && (int(now.attr.Uid) != n.Uid || int(now.attr.Gid) != n.Gid) {
		return false // a chown
	}
	nowOK := err == nil && now.Mode().Type() == n.Mode.Type() && modeBits(now.Mode()) == modeBits(n.Mode)
	baseOK := e.Base.Exists && kindOf(e.Base.Mode) == kindOf(n.Mode) && modeBits(e.Base.Mode) == modeBits(n.Mode)
	switch e.Kind {
	case kindDir:
		return !e.Opaque && (nowOK || baseOK)
	case kindSymlink:
		if baseOK && e.Base.Hash == hashBytes([]byte(n.Target)) {
			return true
		}
		t, err := d.readlinkLower(lower)
		return nowOK && err == nil && t == n.Target
	}
	size := int64(0)
	if n.Data {
		fi, err := os.Stat(d.dataPath(n.dataName(e.Ino)))
		if err != nil {
			return false
		}
		size = fi.Size()
	}
	index := isGitIndex(lower) && e.Base.Kept
	baseOK = baseOK && e.Base.Size == size
	nowOK = nowOK && now.Size() == size
	if !baseOK && !nowOK && !index {
		return false
	}
	ours, err := d.draftContent(e, n)
	if err != nil {
		return false
	}
	if baseOK && e.Base.Hash == hashBytes(ours) {
		return true
	}
	if index {
		// Refreshed by git, nothing staged (see gitindex.go).
		if b, err := d.readBlob(e.Base.Hash); err == nil && sameIndex(d.gitDirOf(lower), b, ours) {
			return true
		}
	}
	if !nowOK {
		return false
	}
	theirs, ok, err := d.userContent(lower)
	return ok && err == nil && bytes.Equal(ours, theirs)
}

// changes returns the items that change something (see same), each
// with a copy of its inode. Takes d.mu for reading to copy the items;
// the comparisons run without it.
func (d *Draft) changes() []item {
	d.mu.RLock()
	all := d.items()
	d.mu.RUnlock()
	d.memo.prune(all)
	s := d.stamper()
	defer s.close()
	out := all[:0]
	for _, it := range all {
		var n *inode
		if it.hasN {
			n = &it.n
		}
		if !d.sameMemo(&it, n, s) {
			out = append(out, it)
		}
	}
	return out
}

// changesLocked is changes for a caller that holds d.mu.
func (d *Draft) changesLocked() []item {
	all := d.items()
	d.memo.prune(all)
	s := d.stamper()
	defer s.close()
	out := all[:0]
	for _, it := range all {
		if !d.sameMemo(&it, d.inodes[it.e.Ino], s) {
			out = append(out, it)
		}
	}
	return out
}

// noopLocked returns the keys of chosen entries reported as changes by
// items that change nothing. Must be called with d.mu held.
func (d *Draft) noopLocked(chosen map[string]*entry) map[string]bool {
	out := map[string]bool{}
	s := d.stamper()
	defer s.close()
	for _, it := range d.items() {
		if _, ok := chosen[it.key]; ok && d.sameMemo(&it, d.inodes[it.e.Ino], s) {
			out[it.key] = true
		}
	}
	return out
}

// sameXattrs reports whether the draft inode has the user extended
// attributes the lower object at lower has.
func (d *Draft) sameXattrs(key, lower string, n *inode) bool {
	x, err := d.lowerXattrs(key, lower)
	if err != nil || len(x) != len(n.Xattr) {
		return false
	}
	for k, v := range x {
		if w, ok := n.Xattr[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}
