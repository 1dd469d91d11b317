//go:build linux

package overlay

import (
	"fmt"
	"sort"
	"strings"

	"github.com/draftfs/draftfs/overlay/internal/textmerge"
)

// FileDiff is the difference one draft change makes to what the user has
// now (the editor buffer if open, else the disk): what commit will write
// over it, the 3-way merge when both changed the file.
type FileDiff struct {
	Path    string `json:"path"`
	From    string `json:"from,omitempty"`
	Change  string `json:"change"`
	Binary  bool   `json:"binary"`
	Added   int    `json:"added"`
	Deleted int    `json:"deleted"`
	// Patch is the git-style unified diff, headers included.
	Patch string `json:"patch"`
	// Ignored: git ignores the path (see StatusEntry); without
	// DiffOptions.Ignored its Patch is left out.
	Ignored bool `json:"ignored,omitempty"`
	// Merged: the user changed the file too and commit merges both
	// changes; the patch goes to the merged content, which is what
	// commit writes.
	Merged bool `json:"merged,omitempty"`
	// Hunks are the pieces of the change that commit and discard take
	// one by one (see Hunk); left out with the patch of an ignored path.
	Hunks []Hunk `json:"hunks,omitempty"`
}

// DiffOptions choose what Diff reports.
type DiffOptions struct {
	Keys []string // below these paths (nil: all)
	// Ignored: give the patches of what git ignores too.
	Ignored bool
	// Annotate each hunk with the checkpoint and author that last
	// wrote it (annotate.go).
	Annotate bool
}

// Diff returns the draft's changes below keys (all when none) as
// git-style unified diffs, sorted by path, ignored paths included.
func (d *Draft) Diff(keys ...string) ([]FileDiff, error) {
	return d.DiffWith(DiffOptions{Keys: keys, Ignored: true})
}

// DiffWith is Diff with options.
func (d *Draft) DiffWith(opts DiffOptions) ([]FileDiff, error) {
	keys := opts.Keys
	if len(keys) == 0 {
		keys = nil
	}
	items := d.changes()
	known := ownerCache{}
	var chosen []item
	var st []StatusEntry
	var dirs []FileDiff // directories whose mode or owner change
	for _, it := range items {
		if !it.selected(keys) {
			continue
		}
		if it.e.Kind == kindDir {
			if m := d.metaOf(it, known); m.any() {
				var hdr strings.Builder
				fmt.Fprintf(&hdr, "diff --git a/%s b/%s\n", it.key, it.key)
				writeMetaHeader(&hdr, m, m.oldExists, m.newExists)
				fd := FileDiff{Path: it.key + "/", Change: it.change, Patch: hdr.String()}
				fd.Hunks = []Hunk{wholeHunk(fd.Path, fd.Patch)}
				dirs = append(dirs, fd)
			}
			continue
		}
		chosen = append(chosen, it)
		st = append(st, StatusEntry{Path: it.key})
	}
	d.markIgnored(st)
	var out []FileDiff
	for i, it := range chosen {
		if st[i].Ignored && !opts.Ignored {
			out = append(out, FileDiff{Path: it.key, From: it.from, Change: it.change, Ignored: true})
			continue
		}
		fd, _, err := d.fileDiff(it, it.n, known)
		if err != nil && d.goneSince(it) {
			continue // committed or discarded while the diff ran
		}
		if err != nil {
			return nil, err
		}
		fd.Ignored = st[i].Ignored
		out = append(out, fd)
	}
	if len(dirs) > 0 {
		out = append(out, dirs...)
		sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	}
	if opts.Annotate {
		if err := d.annotate(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// goneSince reports whether the draft no longer holds it as the diff
// saw it: the diff reads data files without d.mu, so a commit or discard
// can drop one between the snapshot and the read.
func (d *Draft) goneSince(it item) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	e, ok := d.entries[it.key]
	return !ok || e.Ino != it.e.Ino || e.Kind != it.e.Kind
}

// fileDiff returns the diff of one file, and its sides when its hunks
// can be taken one by one.
func (d *Draft) fileDiff(it item, n inode, known ownerCache) (FileDiff, *sides, error) {
	fd := FileDiff{Path: it.key, From: it.from, Change: it.change}
	oldPath := it.key
	lower := it.key
	if it.e.Base != nil {
		lower = it.e.Base.Path
	}
	if it.from != "" {
		oldPath, lower = it.from, it.from
	}
	var old []byte
	oldExists := false
	if it.e.Base == nil || !it.e.Base.NoLower || it.from != "" {
		var err error
		if old, oldExists, err = d.userContent(lower); err != nil {
			return fd, nil, fmt.Errorf("overlay: diff %q: %w", it.key, err)
		}
	}
	var cur []byte
	newExists := it.e.Kind != kindWhiteout
	if newExists {
		var err error
		if cur, err = d.draftContent(&it.e, &n); err != nil {
			return fd, nil, fmt.Errorf("overlay: diff %q: %w", it.key, err)
		}
	}
	var hdr strings.Builder
	fmt.Fprintf(&hdr, "diff --git a/%s b/%s\n", oldPath, it.key)
	writeMetaHeader(&hdr, d.metaOf(it, known), oldExists, newExists)
	if it.from != "" {
		fmt.Fprintf(&hdr, "rename from %s\nrename to %s\n", it.from, it.key)
	}
	if it.from == "" && it.e.Kind == kindFile && !it.e.redirect() && oldExists {
		// What commit writes when the user changed the file too: the
		// 3-way merge, so the user's own edit never shows as undone.
		if changed, err := d.baseChanged(it.e.Base); err == nil && changed {
			if reason, m, err := d.merge3(it.key, &it.e, cur); err == nil && reason == "" && m != nil {
				cur, fd.Merged = m, true
			}
		}
	}
	fd.Added, fd.Deleted, fd.Binary = textmerge.Stat(old, cur)
	fd.Patch = hdr.String() + textmerge.Unified(oldPath, it.key, old, cur, oldExists, newExists)
	if it.from == "" && it.e.Kind == kindFile && !it.e.redirect() && oldExists && !fd.Binary && len(old) > 0 && len(cur) > 0 {
		sd := &sides{old: old, cur: cur, merged: fd.Merged}
		if fd.Hunks = sd.hunks(it.key); len(fd.Hunks) > 0 {
			return fd, sd, nil
		}
	}
	fd.Hunks = []Hunk{wholeHunk(it.key, fd.Patch)}
	return fd, nil, nil
}

// writeMetaHeader writes git's mode lines, exact (set-id and sticky
// bits show), and the same for owners where the draft changes them.
func writeMetaHeader(hdr *strings.Builder, m meta, oldExists, newExists bool) {
	switch {
	case !oldExists && newExists:
		fmt.Fprintf(hdr, "new file mode %s\n", modeString(m.newMode))
	case oldExists && !newExists:
		om := m.oldMode
		if !m.oldExists {
			om = 0o644 // only an editor buffer holds it
		}
		fmt.Fprintf(hdr, "deleted file mode %s\n", modeString(om))
	case m.modeChanged():
		fmt.Fprintf(hdr, "old mode %s\nnew mode %s\n", modeString(m.oldMode), modeString(m.newMode))
	}
	if m.ownerChanged() {
		fmt.Fprintf(hdr, "old owner %s\nnew owner %s\n", m.oldOwner, m.newOwner)
	}
}
