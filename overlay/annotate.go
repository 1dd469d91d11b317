//go:build linux

package overlay

import (
	"fmt"
	"slices"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/overlay/internal/textmerge"
)

// Annotating a diff says, for each hunk, which step of the timeline last
// wrote it and who: the newest checkpoint whose change touched the
// hunk's lines, found as blame finds a line's commit. Going back from
// the draft's content through the versions of the file the checkpoints
// that changed it hold, the hunk's lines are followed to where they
// stood in each older version until a step's change overlaps them
// (or, for a hunk that only deletes, meets the place where the lines
// went).
//
// Who wrote it is the last change of that path logged in that step (a
// process through the mount, named by its command line, an ACP agent,
// an MCP client), else the checkpoint's author.

// Annotation is which step of the timeline last wrote a hunk.
type Annotation struct {
	// Checkpoint is the step's id, 0 for changes made since the last
	// checkpoint.
	Checkpoint uint64 `json:"checkpoint"`
	Author     Author `json:"author"`
}

// version is a file's content after a step of its history.
type version struct {
	cp     uint64 // the checkpoint after which it is so; 0: the draft now
	text   []byte
	author Author
}

// annotate sets the Annotation of every hunk of diffs (nil when nothing
// in the timeline wrote it: a change made on disk).
func (d *Draft) annotate(diffs []FileDiff) error {
	cps, err := d.Timeline() // newest first
	if err != nil {
		return err
	}
	slices.Reverse(cps)
	log, err := d.Log()
	if err != nil {
		return err
	}
	tl := d.tl
	tl.mu.Lock()
	defer tl.mu.Unlock()
	states := map[uint64]*cpState{}
	stateOf := func(i int) (*cpState, error) {
		if i < 0 {
			return &cpState{}, nil
		}
		if st := states[cps[i].ID]; st != nil {
			return st, nil
		}
		st, err := tl.state(&cps[i])
		states[cps[i].ID] = st
		return st, err
	}
	for i := range diffs {
		fd := &diffs[i]
		if len(fd.Hunks) == 0 {
			continue
		}
		key := trimDirSlash(fd.Path)
		hist, err := d.history(key, cps, log, stateOf)
		if err != nil {
			return fmt.Errorf("overlay: annotate %s: %w", key, err)
		}
		for j := range fd.Hunks {
			h := &fd.Hunks[j]
			h.Annotation = blame(hist, h)
			for k := range h.Parts {
				h.Parts[k].Annotation = blame(hist, &h.Parts[k])
			}
		}
	}
	return nil
}

func trimDirSlash(p string) string {
	if len(p) > 1 && p[len(p)-1] == '/' {
		return p[:len(p)-1]
	}
	return p
}

// history lists the versions of key: what it was before the first
// checkpoint that changed it, after each one that did, and now when it
// changed since.
func (d *Draft) history(key string, cps []Checkpoint, log []LogEntry, stateOf func(int) (*cpState, error)) ([]version, error) {
	tl := d.tl
	var hist []version
	var logStart uint64
	for i, cp := range cps {
		from := logStart
		logStart = cp.LogEnd
		if !slices.Contains(cp.Files, key) {
			continue
		}
		st, err := stateOf(i)
		if err != nil {
			return nil, err
		}
		if hist == nil {
			prev, err := stateOf(i - 1)
			if err != nil {
				return nil, err
			}
			before, _ := tl.sideOf(prev, prev.Entries[key], st, st.Entries[key])
			hist = append(hist, version{text: before})
		}
		text, _ := tl.sideOf(st, st.Entries[key], nil, nil)
		a := cp.Author
		if cp.LogEnd != 0 {
			a = stepAuthor(key, log, from, cp.LogEnd, cp.Author)
		}
		hist = append(hist, version{cp: cp.ID, text: text, author: a})
	}
	now, err := d.draftText(key)
	if err != nil {
		return nil, err
	}
	if hist == nil {
		hist = []version{{}}
	}
	if last := hist[len(hist)-1]; len(hist) == 1 || string(last.text) != string(now) {
		var end uint64
		if len(cps) > 0 {
			end = cps[len(cps)-1].LogEnd
		}
		hist = append(hist, version{text: now, author: stepAuthor(key, log, end, uint64(len(log)), Author{})})
	}
	return hist, nil
}

// draftText is what the draft holds at key now ("" when nothing).
func (d *Draft) draftText(key string) ([]byte, error) {
	f := d.Fs(SourceMount)
	fi, err := f.Lstat(key)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > statMax {
		return nil, nil
	}
	return afero.ReadFile(f, key)
}

// attrOps are the log's ops that change only attributes: who wrote a
// file's lines is who last changed its content, when someone did.
var attrOps = []string{"chmod", "chown", "touch", "utimes", "xattr"}

// stepAuthor is who made the last change of key among the log's
// entries [from, end) (of its content when one did), else a.
func stepAuthor(key string, log []LogEntry, from, end uint64, a Author) Author {
	if by, ok := lastBy(key, log, from, end, a, false); ok {
		return by
	}
	by, _ := lastBy(key, log, from, end, a, true)
	return by
}

func lastBy(key string, log []LogEntry, from, end uint64, a Author, attrs bool) (Author, bool) {
	for i := min(end, uint64(len(log))); i > from; i-- {
		e := log[i-1]
		if e.Path != key && e.From != key && !slices.Contains(e.Paths, key) || !attrs && slices.Contains(attrOps, e.Op) {
			continue
		}
		switch {
		case e.By != "" && e.By == a.Name:
			return a, true // the step's own agent, through the mount
		case e.By != "":
			return Author{Source: e.Source, Name: e.By}, true
		case e.Source == a.Source:
			return a, true
		default:
			return Author{Source: e.Source}, true
		}
	}
	return a, false
}

// blame finds the newest version of hist whose step touched h's lines.
func blame(hist []version, h *Hunk) *Annotation {
	last := len(hist) - 1
	if h.Whole || len(hist) < 2 {
		if last < 1 {
			return nil
		}
		return &Annotation{Checkpoint: hist[last].cp, Author: hist[last].author}
	}
	// h's lines in the newest version, 0-based [s, e); a hunk that only
	// deletes is the place e == s where the lines went (see Hunk).
	s := h.NewStart - 1
	e := s + h.NewLines
	for i := last; i > 0; i-- {
		var changes []textmerge.Change
		for _, hk := range textmerge.Hunks(hist[i-1].text, hist[i].text) {
			changes = append(changes, hk.Changes...)
		}
		if len(changes) == 0 && string(hist[i-1].text) != string(hist[i].text) {
			// Binary: the step changed it all.
			return &Annotation{Checkpoint: hist[i].cp, Author: hist[i].author}
		}
		delta := 0
		for _, c := range changes {
			if touches(s, e, c.NewStart, c.NewEnd) {
				return &Annotation{Checkpoint: hist[i].cp, Author: hist[i].author}
			}
			if c.NewEnd <= s {
				delta += (c.OldEnd - c.OldStart) - (c.NewEnd - c.NewStart)
			}
		}
		s, e = s+delta, e+delta
	}
	return nil
}

// touches reports whether lines [ns, ne) a step changed overlap lines
// [s, e); an empty range (lines deleted there) touches what it borders.
func touches(s, e, ns, ne int) bool {
	if s == e || ns == ne {
		return max(s, ns) <= min(e, ne)
	}
	return max(s, ns) < min(e, ne)
}
