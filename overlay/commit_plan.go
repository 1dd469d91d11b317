//go:build linux

package overlay

import (
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// A commit applies chosen draft entries to disk in two phases, written
// down first as a journal (commitRecord) so a crash at any point is
// finished on the next start:
//
//   - phase A moves the lower objects of renames (files and whole
//     directories) out of the way into a staging directory in the
//     workspace, deepest first, so swaps and chains of renames work;
//   - phase B walks the chosen paths parents first: removes what
//     whiteouts hide, places staged objects at their new paths, makes
//     directories, writes files (temp + rename in the same directory)
//     and symlinks.
//
// Every op of a phase can be replayed. Before anything is touched, what
// each op will overwrite or remove is copied into the commit's undo
// directory, and the committed entries' data files are linked there, so
// undo can put disk and draft back.

// Op kinds of a commit.
const (
	opStage   = "stage"   // move From to Stage
	opPlace   = "place"   // move Stage to Path
	opRemove  = "remove"  // remove Path
	opMkdir   = "mkdir"   // make directory Path
	opChmod   = "chmod"   // set Path's mode
	opWrite   = "write"   // write Path from data file Ino or blob Blob
	opLink    = "link"    // hard link Path to From (committed earlier)
	opSymlink = "symlink" // make Path a symlink to Target
	opMknod   = "mknod"   // make Path a FIFO or device node (Mode, Rdev)
)

// commitOp is one step of a commit.
type commitOp struct {
	Kind   string      `json:"k"`
	Path   string      `json:"p,omitempty"`
	From   string      `json:"f,omitempty"`
	Stage  string      `json:"s,omitempty"`
	Ino    uint64      `json:"i,omitempty"`
	Blob   string      `json:"b,omitempty"`
	Mode   fs.FileMode `json:"m,omitempty"`
	Target string      `json:"t,omitempty"`
	Rdev   uint64      `json:"rd,omitempty"`
	// Backup names the copy (in the commit's undo directory) of what Path
	// held before; "" when nothing was there.
	Backup string `json:"u,omitempty"`
	// OldMode is Path's mode before a chmod or a mkdir over a directory;
	// for a place, the moved object's mode before the commit.
	OldMode fs.FileMode `json:"om,omitempty"`
	// Hash is the sha256 of what the op left at Path, for undo's check.
	Hash string `json:"h,omitempty"`
	// Stat is the written file's stamp, which spares undo reading it
	// back to compare Hash (see unchangedSince); nil in records of
	// earlier versions.
	Stat *fileStamp `json:"st,omitempty"`
	// Xattr are the user extended attributes a written file gets.
	Xattr map[string][]byte `json:"x,omitempty"`
	// Owner is set on what the op makes at Path; nil: as created.
	Owner *Owner `json:"o,omitempty"`
	// Link: the write hard-links the draft's data file into place, and
	// undo takes the file back from Path (see commit_link.go).
	Link bool `json:"l,omitempty"`
}

// commitRecord is the journal and undo record of one commit.
type commitRecord struct {
	ID     uint64            `json:"-"`
	Time   string            `json:"time"`
	State  string            `json:"state"` // applying, placing, done, undone
	Source Source            `json:"source"`
	Paths  []string          `json:"paths"`
	Ops    []commitOp        `json:"ops"`
	Stage  string            `json:"stage"` // staging directory key in the workspace
	Entry  map[string]*entry `json:"entries"`
	Inode  map[uint64]*inode `json:"inodes"`
	// Upto is, while a failed commit rolls back, how many of its ops
	// were (or may have been) applied.
	Upto int `json:"upto,omitempty"`
	// Failure says why a commit was rolled back.
	Failure string `json:"failure,omitempty"`
	// Keep are the files the commit took some hunks of, which stay in
	// the draft rebased on what it wrote (see hunks_keep.go).
	Keep map[string]*keptPart `json:"keep,omitempty"`
	// Stamped (Unix ns) is when the commit was done: after the last
	// change it made to the files its ops' Stat describe.
	Stamped int64 `json:"stamped,omitempty"`
}

// summary is r with only what a record in state keeps once undo can no
// longer use it (expired, undone): when, by what, and its paths.
func (r *commitRecord) summary(state string) *commitRecord {
	return &commitRecord{ID: r.ID, Time: r.Time, State: state, Source: r.Source, Paths: r.Paths}
}

// Commit record states.
const (
	stateStaging = "applying" // phase A under way
	statePlacing = "placing"  // phase A done, phase B under way
	stateDone    = "done"
	stateUndone  = "undone"
	// stateUndoing: an undo under way, finished at the next open.
	stateUndoing = "undoing"
	// stateRollingBack: a commit that failed partway being rolled back
	// (its ops below Upto reverted), finished at the next open.
	stateRollingBack = "rollingBack"
	// stateFailed: a commit rolled back; nothing of it is on disk.
	stateFailed = "failed"
)

// Conflict is a path a commit cannot apply without losing the user's
// change.
type Conflict struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// planLocked turns chosen entries into ops; those in noop change nothing
// and get none (the commit still drops them from the draft). Must be
// called with d.mu held.
func (d *Draft) planLocked(rec *commitRecord, chosen map[string]*entry, merged map[string][]byte, noop map[string]bool, allowOwner bool) error {
	// Phase A: the lower objects renames move, deepest first.
	staged := map[string]string{} // entry key → staging key
	var moving []string
	for k, e := range chosen {
		if noop[k] {
			continue // renamed back where it was: it stays
		}
		if e.redirect() || (e.Kind == kindDir && d.renamedFrom(k, e) != "") {
			moving = append(moving, k)
		}
	}
	sort.Slice(moving, func(i, j int) bool {
		a, b := chosen[moving[i]].Origin, chosen[moving[j]].Origin
		if depth(a) != depth(b) {
			return depth(a) > depth(b)
		}
		return a < b
	})
	movedAway := map[string]bool{} // lower paths phase A moves
	movedTo := map[string]string{} // the same, to the entry key each goes to
	for i, k := range moving {
		movedAway[chosen[k].Origin] = true
		movedTo[chosen[k].Origin] = k
		s := join(rec.Stage, fmt.Sprint(i))
		staged[k] = s
		rec.Ops = append(rec.Ops, commitOp{Kind: opStage, From: chosen[k].Origin, Stage: s})
	}
	// An entry that changes nothing is left out where the lower object
	// it is the same as is at its key once phase A's objects are placed:
	// not where phase A moves that object (mv g b; make g again as it
	// was), or a directory above it, elsewhere; yes where the object
	// comes to the key with a directory above it that phase A moves
	// there (a file renamed away and back below a renamed directory).
	stays := func(k string) bool {
		if !noop[k] {
			return false
		}
		p := chosen[k].Base.Path
		for q := p; q != ""; q = parentOf(q) {
			if to, ok := movedTo[q]; ok {
				return to+strings.TrimPrefix(p, q) == k
			}
		}
		return true
	}
	// Phase B: parents first.
	written := map[uint64]string{} // inode → first path written
	for k, e := range chosen {
		if stays(k) && e.Ino != 0 && e.Kind != kindDir {
			// The object is on disk at k already: its other names
			// are links to it, as in the view.
			written[e.Ino] = k
		}
	}
	for _, k := range sortedKeys(chosen) {
		e := chosen[k]
		if stays(k) {
			continue
		}
		var n *inode
		if e.Ino != 0 {
			n = d.inodes[e.Ino]
		}
		replaces := false
		if e.Base != nil && !e.Base.NoLower && !movedAway[e.Base.Path] {
			replaces, _ = d.diskHas(e.Base.Path)
		}
		op := commitOp{Path: k}
		switch {
		case e.Kind == kindWhiteout:
			op.Kind = opRemove
		case staged[k] != "":
			op.Kind, op.Stage = opPlace, staged[k]
			if n != nil {
				op.Mode = n.Mode
			}
			if ok, fi := d.diskHas(e.Origin); ok {
				op.OldMode = fi.Mode() // what undo gives the moved object back
			}
		case n == nil:
			// A rename phase A does not stage: a gap in the planner, refused
			// rather than half applied.
			return fmt.Errorf("overlay: commit: %q: the commit cannot place this rename; commit its directory with it, or report this: %w", k, ErrConflict)
		case e.Kind == kindDir && !e.Opaque && e.Base != nil && e.Base.Exists && e.Base.Kind == kindDir:
			if modeBits(n.Mode) == modeBits(e.Base.Mode) && !d.metaOf(item{key: k, e: *e, n: *n}, d.owners).any() {
				continue // only its times changed (names made in it): nothing to write
			}
			op.Kind, op.Mode, op.OldMode = opChmod, n.Mode, e.Base.Mode
			replaces = false
		case e.Kind == kindDir:
			// A directory made anew over one the user has: its content
			// is replaced only if the draft removed the old one.
			op.Kind, op.Mode = opMkdir, n.Mode
			replaces = replaces && e.Base.Exists
		case e.Kind == kindSymlink:
			op.Kind, op.Target = opSymlink, n.Target
		case e.Kind == kindSpecial && n.Mode&fs.ModeSocket != 0:
			// A socket is committed as nothing, as git and tar leave
			// sockets out: only what the path held before goes.
			op.Kind = opRemove
		case written[e.Ino] != "":
			// Another name of an object this commit made: a hard link,
			// a FIFO's or device node's as a file's.
			op.Kind, op.From = opLink, written[e.Ino]
			if e.Kind == kindSpecial {
				op.Mode = n.Mode // no content to hash: undo checks the type
			}
		case e.Kind == kindSpecial:
			op.Kind, op.Mode, op.Rdev = opMknod, n.Mode, n.Rdev
			written[e.Ino] = k
		default:
			op.Kind, op.Mode, op.Xattr = opWrite, n.Mode, n.Xattr
			if m, ok := merged[k]; ok {
				op.Blob = hashBytes(m)
				if err := d.keepBlob(op.Blob, m); err != nil {
					return fmt.Errorf("overlay: commit: keep merged %q: %w", k, err)
				}
			} else {
				op.Ino = e.Ino
			}
			written[e.Ino] = k
		}
		switch op.Kind {
		case opWrite, opMkdir, opSymlink, opMknod:
			op.Owner = d.ownerFor(k, e, allowOwner)
		case opChmod:
			if allowOwner {
				op.Owner = d.ownerFor(k, e, allowOwner)
			}
		}
		if replaces {
			backup := fmt.Sprint(len(rec.Ops))
			if err := d.backup(rec.ID, e.Base.Path, backup, movedAway); err != nil {
				return err
			}
			op.Backup = backup
		}
		rec.Ops = append(rec.Ops, op)
	}
	return nil
}

// linkedParentsLocked finds chosen paths a parent of which is a symlink
// on disk now (the user or an earlier commit put it there): the draft
// wrote below a directory, and applying that through the link would
// write or remove outside it, perhaps outside the workspace. These
// refuse the commit even with --force. A parent the commit itself makes
// a directory again is no obstacle. Must be called with d.mu held.
func (d *Draft) linkedParentsLocked(chosen map[string]*entry) []Conflict {
	isLink := map[string]bool{}
	// placed: p is where phase B puts things, after phase A moved
	// what renames take (not an origin, which phase A reads as it is).
	linked := func(p string, placed bool) string {
		for i := 0; i < len(p); i++ {
			if p[i] != '/' {
				continue
			}
			q := p[:i]
			if e, ok := chosen[q]; ok && e.Kind == kindDir && (e.Opaque || e.Base == nil || !e.Base.Exists || e.Base.Kind != kindDir || placed && d.renamedFrom(q, e) != "") {
				return "" // the commit makes q a directory first (or moves one there)
			}
			link, seen := isLink[q]
			if !seen {
				fi, err := lstatDisk(d.w.disk, q)
				link = err == nil && fi.Mode()&fs.ModeSymlink != 0
				isLink[q] = link
				if err != nil {
					return "" // nothing below q on disk to go through
				}
			}
			if link {
				return q
			}
		}
		return ""
	}
	var out []Conflict
	for _, k := range sortedKeys(chosen) {
		e := chosen[k]
		q := linked(k, true)
		if q == "" && e.Origin != "" {
			q = linked(e.Origin, false)
		}
		if q != "" {
			out = append(out, Conflict{k, fmt.Sprintf("its parent %s is a symlink on disk now; committing would go through it (--force does not: make %s a directory again, or discard %s)", q, q, k)})
		}
	}
	return out
}

// withConflicts adds more to conflicts, sorted by path; more replaces
// what conflicts says about the same path.
func withConflicts(conflicts, more []Conflict) []Conflict {
	if len(more) == 0 {
		return conflicts
	}
	replaced := map[string]bool{}
	for _, c := range more {
		replaced[c.Path] = true
	}
	out := append([]Conflict{}, more...)
	for _, c := range conflicts {
		if !replaced[c.Path] {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
