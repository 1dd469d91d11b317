//go:build linux

package overlay

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/draftfs/draftfs/overlay/internal/textmerge"
)

// Per-hunk review takes part of a file's change: the hunks of its diff
// (what the user has now, to what commit writes) that the user keeps are
// committed, those rejected are discarded, the rest stays in the draft.
//
// A hunk's ID is a hash of the path, the content the diff starts from
// and the lines the hunk changes, so it names the same change for as
// long as neither the draft nor the user's file changes, and no other
// one after: a selection made on an old diff is refused (ErrNoHunk),
// never applied elsewhere.
//
// Committing some hunks of a file writes what the user has with those
// hunks made, through the commit machinery (journaled, atomic, undone
// as any commit), and keeps the file in the draft rebased on it: its
// base becomes what was written, its content what the diff showed (the
// 3-way merge when the user changed the file too), so its diff shows the
// hunks left. Discarding some hunks rewrites the draft's content as
// what the user has with only the other hunks made. Taking every hunk
// of a file takes the whole change, mode included.

// Hunk is a piece of a file's change that can be committed or discarded
// on its own.
type Hunk struct {
	ID string `json:"id"`
	// Text is the hunk as the patch shows it, its "@@" line first; for a
	// change taken whole, the file's patch.
	Text string `json:"text"`
	// Whole: the file's change is one piece (a new, deleted, renamed,
	// binary or empty file, a mode change alone, a symlink...).
	Whole bool `json:"whole,omitempty"`
	// OldStart, OldLines, NewStart, NewLines say which lines change,
	// context left out: 1-based, as in the "@@" line; a side with no
	// lines starts at the line before which the other side's go.
	OldStart int `json:"oldStart,omitempty"`
	OldLines int `json:"oldLines,omitempty"`
	NewStart int `json:"newStart,omitempty"`
	NewLines int `json:"newLines,omitempty"`
	// Parts are the smaller hunks a hunk splits into (`git add -p`'s s),
	// when it has more than one change.
	Parts []Hunk `json:"parts,omitempty"`
	// Annotation says which checkpoint last wrote the hunk, and who
	// (DiffOptions.Annotate; nil when nothing in the timeline did).
	Annotation *Annotation `json:"annotation,omitempty"`
}

// sides are the two texts of a file's diff whose hunks can be taken one
// by one: what the user has, and what commit writes.
type sides struct {
	old, cur []byte
	merged   bool
}

// change is one change of a file, with its hunk ID.
type change struct {
	id string
	c  textmerge.Change
}

// hunks returns the file's hunks, their parts when they split.
func (s *sides) hunks(key string) []Hunk {
	oldHash := hashBytes(s.old)
	hs := textmerge.Hunks(s.old, s.cur)
	out := make([]Hunk, 0, len(hs))
	for _, h := range hs {
		hk := Hunk{ID: hunkID(key, oldHash, s, h.Changes), Text: h.Text}
		hk.setLines(h.Changes[0], h.Changes[len(h.Changes)-1])
		if len(h.Changes) > 1 {
			for i, c := range h.Changes {
				prevEnd, nextStart := -1, -1
				if i > 0 {
					prevEnd = h.Changes[i-1].OldEnd
				}
				if i < len(h.Changes)-1 {
					nextStart = h.Changes[i+1].OldStart
				}
				p := Hunk{ID: hunkID(key, oldHash, s, h.Changes[i:i+1]), Text: textmerge.ChangeText(s.old, s.cur, c, prevEnd, nextStart)}
				p.setLines(c, c)
				hk.Parts = append(hk.Parts, p)
			}
		}
		out = append(out, hk)
	}
	return out
}

// changes lists every change of the file with the ID of the part that
// is it alone.
func (s *sides) changes(key string) []change {
	oldHash := hashBytes(s.old)
	var out []change
	for _, h := range textmerge.Hunks(s.old, s.cur) {
		for i := range h.Changes {
			out = append(out, change{id: hunkID(key, oldHash, s, h.Changes[i:i+1]), c: h.Changes[i]})
		}
	}
	return out
}

// setLines sets the line ranges of a hunk spanning changes first to
// last.
func (h *Hunk) setLines(first, last textmerge.Change) {
	h.OldStart, h.OldLines = first.OldStart+1, last.OldEnd-first.OldStart
	h.NewStart, h.NewLines = first.NewStart+1, last.NewEnd-first.NewStart
}

// hunkID names changes of the file at key by what they change and
// where, over the content the diff starts from (its hash, oldHash).
func hunkID(key, oldHash string, s *sides, cs []textmerge.Change) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", key, oldHash)
	for _, c := range cs {
		o, n := textmerge.ChangeLines(s.old, s.cur, c)
		fmt.Fprintf(h, "%d,%d,%d\x00", c.OldStart, len(o), len(n))
		h.Write(o)
		h.Write([]byte{0})
		h.Write(n)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// wholeHunk is the one hunk of a change taken whole.
func wholeHunk(key, patch string) Hunk {
	sum := sha256.Sum256([]byte(key + "\x00whole\x00" + patch))
	return Hunk{ID: hex.EncodeToString(sum[:])[:12], Text: patch, Whole: true}
}

// hunkChoice is what a list of hunk IDs takes: whole changes (keys) and
// some changes of files (partial, by key).
type hunkChoice struct {
	keys    []string
	partial map[string]*partialFile
}

// partialFile is the part of a file's change a hunk selection takes.
type partialFile struct {
	sides
	chosen []textmerge.Change // in order
	rest   []textmerge.Change // the others, in order
}

// hunkFile is a file whose diff holds some of the hunks a selection
// names: whole holds the ID of its one hunk when its change is taken
// whole.
type hunkFile struct {
	whole map[string]bool
}

// hunkFiles returns the keys of the files whose diffs hold the hunks
// ids. Reads without d.mu, as Diff does; the selection is made again
// under the lock (chooseHunksLocked).
func (d *Draft) hunkFiles(ids []string) (map[string]*hunkFile, error) {
	diffs, err := d.DiffWith(DiffOptions{Ignored: true})
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	files := map[string]*hunkFile{}
	for _, fd := range diffs {
		key := strings.TrimSuffix(fd.Path, "/")
		for _, h := range fd.Hunks {
			found := want[h.ID]
			for _, p := range h.Parts {
				found = found || want[p.ID]
			}
			if found {
				f := files[key]
				if f == nil {
					f = &hunkFile{}
					files[key] = f
				}
				if h.Whole {
					f.whole = map[string]bool{h.ID: true}
				}
				delete(want, h.ID)
				for _, p := range h.Parts {
					delete(want, p.ID)
				}
			}
		}
	}
	if len(want) > 0 {
		missing := sortedKeys(want)
		return nil, fmt.Errorf("overlay: draft %s: hunk %s: %w: the draft or your file changed since the diff that listed it; list the hunks again (draftfs diff --json)",
			d.name, strings.Join(missing, ", "), ErrNoHunk)
	}
	return files, nil
}

// chooseHunksLocked resolves hunk IDs against the draft as it is: files
// is what hunkFiles found; a split file's sides are read again, and an
// ID that no longer names a change refuses the selection. Must be called
// with d.mu held.
func (d *Draft) chooseHunksLocked(ids []string, files map[string]*hunkFile) (*hunkChoice, error) {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	ch := &hunkChoice{partial: map[string]*partialFile{}}
	matched := map[string]bool{}
	items := d.items()
	for _, key := range sortedKeys(files) {
		if files[key].whole != nil {
			// A whole change: taken as a commit or discard of its path.
			ch.keys = append(ch.keys, key)
			for _, id := range ids {
				if files[key].whole[id] {
					matched[id] = true
				}
			}
			continue
		}
		i := slices.IndexFunc(items, func(it item) bool { return it.key == key })
		if i < 0 {
			return nil, fmt.Errorf("overlay: draft %s: %s: %w: the draft no longer changes it", d.name, key, ErrNoHunk)
		}
		n := d.inodes[items[i].e.Ino]
		if n == nil {
			n = &inode{}
		}
		_, sd, err := d.fileDiff(items[i], *n, d.owners)
		if err != nil {
			return nil, err
		}
		if sd == nil {
			return nil, fmt.Errorf("overlay: draft %s: %s: %w: its change can no longer be taken hunk by hunk", d.name, key, ErrNoHunk)
		}
		p := &partialFile{sides: *sd}
		take := map[string]bool{} // IDs of the changes taken
		for _, h := range sd.hunks(key) {
			if want[h.ID] {
				matched[h.ID] = true
				take[h.ID] = true // a hunk of one change is its own part
				for _, part := range h.Parts {
					take[part.ID] = true
				}
			}
			for _, part := range h.Parts {
				if want[part.ID] {
					matched[part.ID] = true
					take[part.ID] = true
				}
			}
		}
		for _, c := range sd.changes(key) {
			if take[c.id] {
				p.chosen = append(p.chosen, c.c)
			} else {
				p.rest = append(p.rest, c.c)
			}
		}
		switch {
		case len(p.chosen) == 0:
			return nil, fmt.Errorf("overlay: draft %s: %s: %w: your file or the draft's changed since the diff; list the hunks again (draftfs diff --json)", d.name, key, ErrNoHunk)
		case len(p.rest) == 0:
			ch.keys = append(ch.keys, key)
		default:
			ch.keys = append(ch.keys, key)
			ch.partial[key] = p
		}
	}
	for _, id := range ids {
		if !matched[id] {
			return nil, fmt.Errorf("overlay: draft %s: hunk %s: %w: the draft or your file changed since the diff that listed it; list the hunks again (draftfs diff --json)", d.name, id, ErrNoHunk)
		}
	}
	return ch, nil
}
