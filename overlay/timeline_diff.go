//go:build linux

package overlay

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"sort"
	"strings"

	"github.com/draftfs/draftfs/overlay/internal/textmerge"
)

// changed lists the paths whose entry or content differs between two
// states, and counts the lines added and deleted in text files.
func (tl *timeline) changed(a, b *cpState) (files []string, added, deleted int) {
	if a == nil {
		a = &cpState{}
	}
	if b.after(a) {
		files = touchedChangedKeys(a, b)
	} else {
		files = changedKeys(a, b)
	}
	sort.Strings(files)
	for _, k := range files {
		ea, eb := a.Entries[k], b.Entries[k]
		// A path without an entry shows what is below the draft: the
		// base the other side's entry started from.
		old, oldSize := textChunks(a, ea)
		if ea == nil {
			old, oldSize = baseChunks(b, eb)
		}
		cur, curSize := textChunks(b, eb)
		if eb == nil {
			cur, curSize = baseChunks(a, ea)
		}
		switch fresh := tl.fresh[b.contentOf(eb)]; {
		case old == nil && cur != nil && fresh != nil: // new, just read
			ad, _, _ := textmerge.Stat(nil, fresh)
			added += ad
		case old != nil || cur != nil:
			ad, de := tl.statChunks(old, cur, oldSize, curSize)
			added, deleted = added+ad, deleted+de
		}
	}
	return files, added, deleted
}

// changedKeys is the keys whose entry or content differs between a and
// b.
func changedKeys(a, b *cpState) []string {
	files := []string{}
	for k, ea := range a.Entries {
		if !a.same(b, ea, b.Entries[k]) {
			files = append(files, k)
		}
	}
	for k := range b.Entries {
		if _, ok := a.Entries[k]; !ok {
			files = append(files, k)
		}
	}
	return files
}

// touchedChangedKeys is changedKeys for b read over a (see
// cpState.after): among the keys b touched and those whose inode it
// touched.
func touchedChangedKeys(a, b *cpState) []string {
	keys := maps.Clone(b.touched)
	if keys == nil {
		keys = map[string]struct{}{}
	}
	if len(b.touchedInos) > 0 {
		for k, e := range b.Entries {
			if _, ok := b.touchedInos[e.Ino]; ok {
				keys[k] = struct{}{}
			}
		}
	}
	files := []string{}
	for k := range keys {
		ea, inA := a.Entries[k]
		eb, inB := b.Entries[k]
		if inA && !a.same(b, ea, eb) || !inA && inB {
			files = append(files, k)
		}
	}
	return files
}

// same reports whether entry ea at state a and entry eb at state b are
// the same, with the same inode and content. States captured one after
// the other share what did not change (see timeline.capture): the same
// pointers are the same.
func (a *cpState) same(b *cpState, ea, eb *entry) bool {
	var na, nb *inode
	if ea != nil {
		na = a.Inodes[ea.Ino]
	}
	if eb != nil {
		nb = b.Inodes[eb.Ino]
	}
	return (ea == eb || sameJSON(ea, eb)) && (na == nb || sameJSON(na, nb)) && a.contentOf(ea) == b.contentOf(eb)
}

// contentOf is the hash of an entry's data content, "" when none.
func (st *cpState) contentOf(e *entry) string {
	if e == nil || e.Ino == 0 || st.Data[e.Ino] == nil {
		return ""
	}
	return st.Data[e.Ino].Hash
}

func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// textChunks are the chunks of what a path held at a state, for
// counting lines: the draft's content, else the base it started from;
// nil for what is not a file of countable size. Also returns the
// content's size.
func textChunks(st *cpState, e *entry) ([]string, int64) {
	if e == nil || e.Kind != kindFile {
		return nil, 0
	}
	if cd := st.Data[e.Ino]; e.Ino != 0 && cd != nil {
		if cd.Size > statMax {
			return nil, 0
		}
		return cd.Chunks, cd.Size
	}
	return baseChunks(st, e)
}

// baseChunks are the chunks of the content an entry's base kept.
func baseChunks(st *cpState, e *entry) ([]string, int64) {
	if e != nil && e.Base != nil && e.Base.Kept && e.Base.Size <= statMax {
		return st.Blobs[e.Base.Hash], e.Base.Size
	}
	return nil, 0
}

// statChunks counts the lines added and deleted from the content of
// chunks a to that of chunks b. Only the chunks between their common
// first and last ones are read: content-defined chunks of two versions
// of a file differ only around the changes, and the lines cut at the
// edges are the same on both sides, so the counts are exact. sizeA and
// sizeB are the whole contents' sizes.
func (tl *timeline) statChunks(a, b []string, sizeA, sizeB int64) (added, deleted int) {
	n := len(a)
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	if len(a) != n { // what is left is smaller by an unknown amount
		sizeA, sizeB = -1, -1
	}
	old, err1 := tl.chunks.get(a, sizeA)
	cur, err2 := tl.chunks.get(b, sizeB)
	if err1 != nil || err2 != nil {
		return 0, 0
	}
	added, deleted, _ = textmerge.Stat(old, cur)
	return added, deleted
}

// baseText is the content an entry's base kept.
func (tl *timeline) baseText(st *cpState, e *entry) ([]byte, error) {
	if cs, size := baseChunks(st, e); cs != nil {
		return tl.chunks.get(cs, size)
	}
	return nil, nil
}

// DiffCheckpoints returns what changed from checkpoint a to checkpoint
// b (a 0: from what is below the draft, the bases its entries started
// from) as git-style diffs, one per path, below keys (none: all).
func (d *Draft) DiffCheckpoints(a, b uint64, keys ...string) ([]FileDiff, error) {
	tl := d.tl
	tl.mu.Lock()
	defer tl.mu.Unlock()
	sa, sb := &cpState{}, (*cpState)(nil)
	for _, x := range []struct {
		id uint64
		st **cpState
	}{{a, &sa}, {b, &sb}} {
		if x.id == 0 {
			continue
		}
		cp, err := tl.read(x.id)
		if err != nil {
			return nil, err
		}
		if *x.st, err = tl.state(cp); err != nil {
			return nil, err
		}
	}
	if sb == nil {
		return nil, fmt.Errorf("overlay: diff of checkpoints: give the later one: %w", ErrNoCheckpoint)
	}
	files, _, _ := tl.changed(sa, sb)
	out := []FileDiff{}
	for _, k := range files {
		if len(keys) > 0 && !slicesContainsWithin(keys, k) {
			continue
		}
		ea, eb := sa.Entries[k], sb.Entries[k]
		if eb != nil && eb.Kind == kindDir && eb.Origin != "" && (ea == nil || ea.Origin != eb.Origin) {
			out = append(out, dirRename(eb.Origin, k))
			continue
		}
		if back := movedBack(sa, sb, k); back != "" {
			// Renamed back to where it came from (a rewind, a second
			// rename): the origin shows the directory again.
			out = append(out, dirRename(k, back))
			continue
		}
		old, oldExists := tl.sideOf(sa, ea, sb, eb)
		cur, newExists := tl.sideOf(sb, eb, sa, ea)
		if !oldExists && !newExists {
			continue // a directory, or what was never a file on either side
		}
		fd := FileDiff{Path: k, Change: StatusModified}
		ma, mb := sa.modeOf(ea, eb), sb.modeOf(eb, ea)
		var hdr strings.Builder
		fmt.Fprintf(&hdr, "diff --git a/%s b/%s\n", k, k)
		switch {
		case !oldExists:
			fd.Change = StatusAdded
			fmt.Fprintf(&hdr, "new file mode %s\n", modeString(mb))
		case !newExists:
			fd.Change = StatusDeleted
			fmt.Fprintf(&hdr, "deleted file mode %s\n", modeString(ma))
		case ma != mb:
			fmt.Fprintf(&hdr, "old mode %s\nnew mode %s\n", modeString(ma), modeString(mb))
		}
		fd.Added, fd.Deleted, fd.Binary = textmerge.Stat(old, cur)
		fd.Patch = hdr.String() + textmerge.Unified(k, k, old, cur, oldExists, newExists)
		out = append(out, fd)
	}
	return out, nil
}

// dirRename is the diff of a directory renamed from one path to another.
func dirRename(from, to string) FileDiff {
	return FileDiff{Path: to + "/", From: from, Change: StatusRenamed,
		Patch: fmt.Sprintf("diff --git a/%s b/%s\nrename from %s\nrename to %s\n", from, to, from, to)}
}

// movedBack is where the directory renamed to k at state a went back
// to at state b: its origin, shown again by what is below the draft;
// "" when it did not.
func movedBack(a, b *cpState, k string) string {
	ea, eb := a.Entries[k], b.Entries[k]
	if ea == nil || ea.Kind != kindDir || ea.Origin == "" || eb != nil && eb.Origin == ea.Origin {
		return ""
	}
	if eo := b.Entries[ea.Origin]; eo != nil && (eo.Kind == kindWhiteout || eo.Opaque) {
		return "" // the origin is gone or replaced: k was deleted
	}
	if eb != nil && eb.Kind != kindWhiteout {
		return "" // something else is at k now
	}
	return ea.Origin
}

// sideOf is a path's content at state st where its entry is e (other,
// oe: the other side, whose base stands for what is below the draft
// when e is nil), and whether it exists as a file there.
func (tl *timeline) sideOf(st *cpState, e *entry, other *cpState, oe *entry) ([]byte, bool) {
	switch {
	case e == nil:
		if oe == nil || oe.Base == nil || !oe.Base.Exists || oe.Base.Kind != kindFile {
			return nil, false
		}
		b, err := tl.baseText(other, oe)
		return b, err == nil && b != nil
	case e.Kind == kindWhiteout:
		return nil, false
	case e.Kind == kindSymlink && st.Inodes[e.Ino] != nil:
		return []byte(st.Inodes[e.Ino].Target), true
	case e.Kind != kindFile:
		return nil, false
	}
	if cd := st.Data[e.Ino]; e.Ino != 0 && cd != nil {
		b, err := tl.chunks.get(cd.Chunks, cd.Size)
		return b, err == nil
	}
	b, err := tl.baseText(st, e) // a redirect: its origin's content
	return b, err == nil && b != nil
}

// modeOf is the mode of a path at st where its entry is e (nil: the
// other side's base, oe's).
func (st *cpState) modeOf(e, oe *entry) fs.FileMode {
	if e != nil && e.Ino != 0 && st.Inodes[e.Ino] != nil {
		return st.Inodes[e.Ino].Mode
	}
	if e != nil && e.Base != nil && e.Base.Exists {
		return e.Base.Mode
	}
	if oe != nil && oe.Base != nil && oe.Base.Exists {
		return oe.Base.Mode
	}
	return 0o644
}

// slicesContainsWithin reports whether k is one of keys or lies below one.
func slicesContainsWithin(keys []string, k string) bool {
	for _, s := range keys {
		if within(k, s) {
			return true
		}
	}
	return false
}
