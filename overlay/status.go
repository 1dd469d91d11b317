//go:build linux

package overlay

import (
	"io/fs"
	"os"
	"slices"
)

// Change kinds reported by Status.
const (
	StatusModified = "modified"
	StatusAdded    = "added"
	StatusDeleted  = "deleted"
	StatusRenamed  = "renamed"
)

// StatusEntry is one changed path of a draft, as `draftfs status --json`
// prints it. Directories carry a trailing "/" in Path.
type StatusEntry struct {
	Path     string `json:"path"`
	Change   string `json:"change"`
	From     string `json:"from,omitempty"`
	Conflict bool   `json:"conflict"`
	// Ignored: git ignores the path (or it is in a .git directory), so
	// review folds it into Fold, the topmost ignored directory ("dir/")
	// or the path itself.
	Ignored bool   `json:"ignored,omitempty"`
	Fold    string `json:"fold,omitempty"`
	// AlsoIn names the other drafts of the workspace that change the
	// path too (set by the control server).
	AlsoIn []string `json:"alsoIn,omitempty"`
	// OldMode and NewMode (as git spells them, exactly: 100644, 104755)
	// are set when the mode changes; NewMode alone for a new path with
	// set-id or sticky bits.
	OldMode string `json:"oldMode,omitempty"`
	NewMode string `json:"newMode,omitempty"`
	// OldOwner and NewOwner ("uid:gid") are set when the draft gives the
	// path another owner than the disk has, or would give a new path.
	OldOwner string `json:"oldOwner,omitempty"`
	NewOwner string `json:"newOwner,omitempty"`
}

// Letter is the one-letter code of the change (M, A, D, R), or C when the
// user changed the path since the agent's copy-up.
func (s StatusEntry) Letter() string {
	if s.Conflict {
		return "C"
	}
	switch s.Change {
	case StatusAdded:
		return "A"
	case StatusDeleted:
		return "D"
	case StatusRenamed:
		return "R"
	}
	return "M"
}

// item is one reportable change: the entry at key, and for a rename the
// whiteout that hides its origin.
type item struct {
	key    string
	e      entry
	n      inode // a copy of the entry's inode, when it has one (hasN)
	hasN   bool
	change string
	from   string // origin of a rename
	source string // key of the whiteout at the rename's origin, if any
	leaf   bool   // no draft entries below key
	st     *stamp // what sameMemo stamped, for statusEntryMemo; nil: none
}

// items lists the draft's reportable changes, sorted by key. Must be
// called with d.mu held.
func (d *Draft) items() []item {
	// Renames first, so the whiteouts at their origins are not reported
	// as deletions of their own.
	origins := map[string]string{} // lower path → key of the renamed entry
	for k, e := range d.entries {
		if from := d.renamedFrom(k, e); from != "" {
			origins[from] = k
		}
	}
	sources := map[string]string{} // renamed entry key → whiteout key
	// The keys are sorted, not the items: moving 10,000 items of some
	// 250 bytes about costs more than building them in order.
	keys := make([]string, 0, len(d.entries))
	for k := range d.entries {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]item, 0, len(d.entries))
	for _, k := range keys {
		e := d.entries[k]
		it := item{key: k, e: *e, leaf: len(d.children[k]) == 0}
		if n := d.inodes[e.Ino]; e.Ino != 0 && n != nil {
			it.n, it.hasN = *n, true
		}
		switch {
		case e.Kind == kindWhiteout:
			if e.Base == nil || !e.Base.Exists {
				continue
			}
			if dst, ok := origins[e.Base.Path]; ok {
				sources[dst] = k
				continue
			}
			it.change = StatusDeleted
		case d.renamedFrom(k, e) != "":
			it.change, it.from = StatusRenamed, d.renamedFrom(k, e)
		case e.Kind == kindDir:
			n := d.inodes[e.Ino]
			switch {
			case e.Base == nil || !e.Base.Exists || e.Base.Kind != kindDir:
				if !it.leaf && e.Base != nil && !e.Base.Exists {
					continue // shown by what it contains
				}
				it.change = StatusAdded
				if e.Base != nil && e.Base.Exists {
					it.change = StatusModified
				}
			case e.Opaque || modeBits(n.Mode) != modeBits(e.Base.Mode):
				it.change = StatusModified
			default:
				if it.n = *n; !d.metaOf(it, d.owners).any() {
					continue
				}
				it.change = StatusModified
			}
		case e.Base != nil && e.Base.Exists:
			it.change = StatusModified
		default:
			it.change = StatusAdded
		}
		out = append(out, it)
	}
	for i := range out {
		out[i].source = sources[out[i].key]
	}
	return out
}

// renamedFrom is the lower path an entry was renamed from, "" when it
// was not renamed. Must be called with d.mu held.
func (d *Draft) renamedFrom(key string, e *entry) string {
	if e.Origin == "" || e.Kind == kindWhiteout {
		return ""
	}
	if lp, ok := d.lowerPathOf(key); ok && lp == e.Origin {
		return ""
	}
	return e.Origin
}

// selected reports whether an item is chosen by keys (nil: all).
func (it item) selected(keys []string) bool {
	if keys == nil {
		return true
	}
	for _, k := range keys {
		if within(it.key, k) || (it.from != "" && within(it.from, k)) || (it.source != "" && within(it.source, k)) {
			return true
		}
	}
	return false
}

// Status lists the draft's changes below keys (all when none), sorted by
// path, each flagged when the user changed the path since the draft
// first did.
func (d *Draft) Status(keys ...string) ([]StatusEntry, error) {
	if len(keys) == 0 {
		keys = nil
	}
	items := d.changes()
	out, err := d.statusEntries(items, func(it item) bool { return it.selected(keys) }, ownerCache{})
	if err != nil {
		return nil, err
	}
	d.markIgnored(out)
	return out, nil
}

// statusEntries reports the items keep accepts, in order (known: see
// newOwner).
func (d *Draft) statusEntries(items []item, keep func(item) bool, known ownerCache) ([]StatusEntry, error) {
	n := 0
	for _, it := range items {
		if keep(it) {
			n++
		}
	}
	out := make([]StatusEntry, 0, n)
	for _, it := range items {
		if !keep(it) {
			continue
		}
		s, err := d.statusEntryMemo(it, known)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Changed returns the paths the draft changes (renames: both ends), as
// Status lists them but without the trailing "/" of directories.
func (d *Draft) Changed() map[string]bool {
	items := d.changes()
	out := make(map[string]bool, len(items))
	for _, it := range items {
		out[it.key] = true
		if it.from != "" {
			out[it.from] = true
		}
	}
	return out
}

// statusEntry reports one item, checking the user's side for a conflict.
func (d *Draft) statusEntry(it item, known ownerCache) (StatusEntry, error) {
	s := StatusEntry{Path: it.key, Change: it.change, From: it.from}
	if it.e.Kind == kindDir {
		s.Path += "/"
		if s.From != "" {
			s.From += "/"
		}
	}
	changed, err := d.baseChanged(it.e.Base)
	s.Conflict = changed
	m := d.metaOf(it, known)
	switch {
	case m.modeChanged():
		s.OldMode, s.NewMode = modeString(m.oldMode), modeString(m.newMode)
	case m.setid():
		s.NewMode = modeString(m.newMode)
	}
	if m.ownerChanged() {
		s.OldOwner, s.NewOwner = m.oldOwner.String(), m.newOwner.String()
	}
	return s, err
}

// baseChanged reports whether the lower layers no longer hold what the
// base recorded: the user edited, saved, created or deleted the path
// since the draft first changed it. Directories count as unchanged while
// they stay directories.
func (d *Draft) baseChanged(b *base) (bool, error) {
	if b == nil || b.NoLower {
		return false, nil
	}
	fi, err := d.lowerStat(baseOf(b.Path), b.Path)
	if err != nil {
		return b.Exists, nil
	}
	if !b.Exists {
		return true, nil
	}
	if kindOf(fi.Mode()) != b.Kind {
		return true, nil
	}
	switch b.Kind {
	case kindDir:
		return false, nil
	case kindSpecial:
		return fi.Mode().Type() != b.Mode.Type() || fi.Sys().(*Attr).Rdev != b.Rdev, nil
	case kindSymlink:
		t, err := d.readlinkLower(b.Path)
		if err != nil {
			return true, nil
		}
		return hashBytes([]byte(t)) != b.Hash, nil
	}
	if s, ok := d.dirtyBuffer(b.Path); ok {
		if b.Version != 0 && s.Version == b.Version {
			return false, nil
		}
		return hashBytes(s.Text) != b.Hash, nil
	}
	if b.Version == 0 && fi.Size() == b.Size && fi.ModTime().UnixNano() == b.Mtime {
		return false, nil
	}
	if fi.Size() != b.Size {
		return true, nil
	}
	cur, _, err := d.readLower(b.Path)
	if err != nil {
		return true, nil
	}
	return hashBytes(cur) != b.Hash, nil
}

// userContent is what the user has now at a lower path (the dirty buffer,
// else the disk) and whether anything is there.
func (d *Draft) userContent(lower string) ([]byte, bool, error) {
	fi, err := d.lowerStat(baseOf(lower), lower)
	if err != nil {
		return nil, false, nil
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		t, err := d.readlinkLower(lower)
		return []byte(t), err == nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, true, nil // a directory or a special file: no content
	}
	b, _, err := d.readLower(lower)
	return b, err == nil, err
}

// draftContent is the content the draft holds for an entry.
func (d *Draft) draftContent(e *entry, n *inode) ([]byte, error) {
	switch {
	case e.redirect():
		b, _, err := d.userContent(e.Origin)
		return b, err
	case n.Mode&fs.ModeSymlink != 0:
		return []byte(n.Target), nil
	case n.Data:
		return os.ReadFile(d.dataPath(n.dataName(e.Ino)))
	}
	return nil, nil
}
