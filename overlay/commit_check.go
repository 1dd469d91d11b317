//go:build linux

package overlay

import (
	"bytes"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/draftfs/draftfs/overlay/internal/textmerge"
)

// chooseLocked returns the entries a commit or discard of keys (nil: all)
// takes: the selected changes with their rename partners and everything
// below them, and, for a commit (ancestors), every ancestor entry they
// need, to a fixpoint. Must be called with d.mu held.
func (d *Draft) chooseLocked(keys []string, ancestors bool) map[string]*entry {
	chosen := map[string]*entry{}
	if keys == nil {
		for k, e := range d.entries {
			chosen[k] = e
		}
		return chosen
	}
	items := d.items()
	partner := map[string]string{}
	// A rename moves its origin on disk: what the draft has at the
	// origin now (an exchange's other half) and the renames from within
	// it read the disk there, so they come along; so do the renames from
	// within a path chosen, whose disk object the commit replaces.
	origins := map[string]string{} // origin → key of the entry renamed from it
	from := map[string]string{}    // the inverse
	for _, it := range items {
		if it.source != "" {
			partner[it.key], partner[it.source] = it.source, it.key
		}
		if it.from != "" {
			origins[it.from], from[it.key] = it.key, it.from
		}
	}
	sortedOrigins := sortedKeys(origins)
	var add func(k string)
	renamesWithin := func(p string) {
		if p == "" {
			return // the root: renames come with their own paths
		}
		for i := sort.SearchStrings(sortedOrigins, p); i < len(sortedOrigins) && strings.HasPrefix(sortedOrigins[i], p); i++ {
			if o := sortedOrigins[i]; within(o, p) {
				add(origins[o])
			}
		}
	}
	add = func(k string) {
		e, ok := d.entries[k]
		if !ok {
			return
		}
		if _, done := chosen[k]; done {
			return
		}
		chosen[k] = e
		if p, ok := partner[k]; ok {
			add(p)
		}
		renamesWithin(k)
		if o := from[k]; o != "" {
			// What the draft has at the origin, or the removal above
			// it that hides it (mv a/c b; rm -r a), or the directory
			// renamed over one above it (mv a/c b; mv x a).
			for q := o; q != ""; q = parentOf(q) {
				if at, ok := d.entries[q]; ok {
					if q == o || at.Kind != kindDir || at.Opaque || at.Origin != "" {
						add(q)
					}
					break
				}
			}
			renamesWithin(o)
		}
		for _, b := range d.keysBelow(k) {
			add(b)
		}
		for q := k; ancestors && q != ""; {
			q = parentOf(q)
			add(q)
		}
	}
	for _, it := range items {
		if it.selected(keys) {
			add(it.key)
		}
	}
	for k := range d.entries {
		for _, s := range keys {
			if within(k, s) {
				add(k)
			}
		}
	}
	return chosen
}

// checkLocked finds conflicts among chosen entries, but those in noop
// (they change nothing), and computes clean 3-way merges. Must be called
// with d.mu held.
func (d *Draft) checkLocked(chosen map[string]*entry, noop map[string]bool) (map[string][]byte, []Conflict, error) {
	merged := map[string][]byte{}
	var conflicts []Conflict
	for _, k := range sortedKeys(chosen) {
		e := chosen[k]
		if noop[k] {
			continue
		}
		changed, err := d.baseChanged(e.Base)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case e.redirect() || (e.Kind == kindDir && d.renamedFrom(k, e) != ""):
			if ok, _ := d.diskHas(e.Origin); !ok {
				conflicts = append(conflicts, Conflict{k, fmt.Sprintf("the rename's source %s is no longer on disk", e.Origin)})
				continue
			}
			if changed && e.Base.Exists && e.Base.Kind != kindDir {
				conflicts = append(conflicts, Conflict{k, "you changed the file this rename replaces"})
			} else if changed && !e.Base.Exists {
				conflicts = append(conflicts, Conflict{k, "you created this path meanwhile"})
			}
		case !changed:
		case e.Kind == kindWhiteout:
			if exists, _ := d.lowerExists(e.Base.Path); exists && e.Base.Kind != kindDir {
				conflicts = append(conflicts, Conflict{k, "you changed the file the draft deletes"})
			}
		case e.Kind == kindDir:
			if fi, err := d.lowerStat(baseOf(e.Base.Path), e.Base.Path); err == nil && !fi.IsDir() {
				conflicts = append(conflicts, Conflict{k, "you created a file where the draft makes a directory"})
			}
		case e.Kind == kindFile:
			c, m, err := d.mergeLocked(k, e)
			if err != nil {
				return nil, nil, err
			}
			if c != "" {
				conflicts = append(conflicts, Conflict{k, c})
			} else if m != nil {
				merged[k] = m
			}
		case e.Kind == kindSpecial:
			conflicts = append(conflicts, Conflict{k, "you changed this special file meanwhile"})
		default:
			conflicts = append(conflicts, Conflict{k, "you changed this symlink meanwhile"})
		}
	}
	return merged, conflicts, nil
}

// mergeLocked merges the user's change to a file since the base into the
// draft's, returning the merged content, or why it cannot.
func (d *Draft) mergeLocked(key string, e *entry) (string, []byte, error) {
	ours, err := d.draftContent(e, d.inodes[e.Ino])
	if err != nil {
		return "", nil, err
	}
	return d.merge3(key, e, ours)
}

// merge3 merges the user's change to a file since the base into ours,
// the draft's content, as a commit does: the merged content (nil when
// the user has ours already), or why it cannot. Reads no draft maps.
func (d *Draft) merge3(key string, e *entry, ours []byte) (string, []byte, error) {
	theirs, exists, err := d.userContent(e.Base.Path)
	if err != nil {
		return "", nil, err
	}
	switch {
	case exists && bytes.Equal(theirs, ours):
		return "", nil, nil
	case !e.Base.Exists:
		return "you created this file meanwhile, with other content", nil, nil
	case !exists:
		return "you deleted this file meanwhile", nil, nil
	case !e.Base.Kept:
		return "both sides changed a file too large to merge", nil, nil
	}
	base, err := d.readBlob(e.Base.Hash)
	if err != nil {
		return "", nil, err
	}
	if reason, m, ok := mergeGit(d, key, e.Base.Path, base, ours, theirs); ok {
		return reason, m, nil
	}
	m, ok := textmerge.Merge(base, ours, theirs)
	switch {
	case !ok && (textmerge.IsBinary(base) || textmerge.IsBinary(ours) || textmerge.IsBinary(theirs)):
		return "you and the draft both changed this binary file, which cannot be merged", nil, nil
	case !ok:
		return "you and the draft changed the same lines", nil, nil
	}
	return "", m, nil
}

// diskHas reports whether the disk has something at a workspace key.
func (d *Draft) diskHas(key string) (bool, fs.FileInfo) {
	fi, err := lstatDisk(d.w.disk, key)
	return err == nil, fi
}
