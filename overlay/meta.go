//go:build linux

package overlay

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/draftfs/draftfs/overlay/beneath"
)

// Beside content, a draft can change a path's mode and owner. Both are
// shown by Status and Diff, and two kinds are committed only when asked
// (CommitOptions.AllowSetid, AllowOwner): set-id and sticky bits, and an
// owner other than the one the disk has (or, for a new path, would give
// it). In a mount other users can write to (--allow-other), either would
// otherwise let them hand the user, or root, a program that runs as the
// committer.

// specialBits are the mode bits a commit writes only when asked.
const specialBits = fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// modeBits are the permission, set-id and sticky bits of m.
func modeBits(m fs.FileMode) fs.FileMode { return m & (fs.ModePerm | specialBits) }

// Owner is a uid and gid.
type Owner struct{ Uid, Gid int }

func (o Owner) String() string { return fmt.Sprintf("%d:%d", o.Uid, o.Gid) }

// meta is what one change does to a path's mode and owner.
type meta struct {
	oldExists, newExists bool
	oldMode, newMode     fs.FileMode
	// oldOwner is the disk's owner, or for a new path the owner the disk
	// would give it; newOwner the draft's.
	oldOwner, newOwner Owner
}

// metaOf compares what the disk has at an item's lower path with what
// the draft makes of it (known: see newOwner).
func (d *Draft) metaOf(it item, known ownerCache) meta {
	var m meta
	lower := it.key
	if it.e.Base != nil {
		lower = it.e.Base.Path
	}
	if it.from != "" {
		lower = it.from
	}
	if it.e.Base == nil || !it.e.Base.NoLower || it.from != "" {
		if fi, err := d.diskLstat(lower); err == nil {
			m.oldExists, m.oldMode = true, fi.Mode()
			m.oldOwner = ownerOf(fi)
		}
	}
	if !m.oldExists {
		m.oldOwner = d.newOwner(it.key, known)
	}
	if it.e.Kind != kindWhiteout {
		m.newExists = true
		m.newMode, m.newOwner = m.oldMode, m.oldOwner
		if !it.e.redirect() {
			m.newMode, m.newOwner = it.n.Mode, Owner{it.n.Uid, it.n.Gid}
		}
	}
	return m
}

// ownerOf is the owner of a disk file's info.
func ownerOf(fi fs.FileInfo) Owner {
	if a, ok := fi.Sys().(*Attr); ok {
		return Owner{int(a.Uid), int(a.Gid)}
	}
	a := infoFrom(fi.Name(), "", fi).attr
	return Owner{int(a.Uid), int(a.Gid)}
}

// newOwner is the owner a path the commit creates gets: the committing
// process's, with the parent's group when the parent is set-gid. It
// keeps its answer by directory in known, unless known is nil.
func (d *Draft) newOwner(key string, known ownerCache) Owner {
	dir := parentOf(key)
	if o, ok := known[dir]; ok {
		return o
	}
	o := Owner{selfEUID, selfEGID}
	if fi, err := d.diskLstat(dir); err == nil && fi.IsDir() && fi.Mode()&fs.ModeSetgid != 0 {
		o.Gid = ownerOf(fi).Gid
	}
	if known != nil {
		known[dir] = o
	}
	return o
}

// ownerCache keeps newOwner's answers by directory for one pass over the
// draft's paths (a status, a diff, a commit's checks and plan), which
// asks once per path: a status of 10,000 new files in 100 directories
// looked each directory up on disk 100 times.
type ownerCache map[string]Owner

// selfEUID and selfEGID own what the process creates, asked once (each
// os.Geteuid is a system call).
var selfEUID, selfEGID = os.Geteuid(), os.Getegid()

// modeChanged: both sides exist and their modes differ.
func (m meta) modeChanged() bool {
	return m.oldExists && m.newExists && modeString(m.oldMode) != modeString(m.newMode)
}

// ownerChanged: the draft gives the path another owner than the disk.
func (m meta) ownerChanged() bool { return m.newExists && m.oldOwner != m.newOwner }

// setid: the commit would write set-id or sticky bits: on a file always
// (its content changes under them), on a directory when they are new.
func (m meta) setid() bool {
	bits := m.newMode & specialBits
	if !m.newExists || bits == 0 {
		return false
	}
	return !m.newMode.IsDir() || !m.oldExists || m.oldMode&specialBits != bits
}

// any reports whether the change touches mode or owner.
func (m meta) any() bool { return m.modeChanged() || m.ownerChanged() || m.setid() }

// modeString spells a mode as git's diff headers do, but exactly: type,
// permission, set-id and sticky bits (100644, 104755, 040755, 120000).
func modeString(m fs.FileMode) string {
	if m&fs.ModeSymlink != 0 {
		return "120000"
	}
	return fmt.Sprintf("%06o", beneath.UnixMode(m))
}

// privilegedLocked finds chosen paths the commit would give set-id or
// sticky bits, or another owner than the disk's, unless opts allows it.
// Must be called with d.mu held.
func (d *Draft) privilegedLocked(chosen map[string]*entry, opts CommitOptions) []Conflict {
	var out []Conflict
	for _, it := range d.items() {
		if _, ok := chosen[it.key]; !ok {
			continue
		}
		m := d.metaOf(it, d.owners)
		switch {
		case m.setid() && !opts.AllowSetid:
			out = append(out, Conflict{it.key, fmt.Sprintf("the draft gives it mode %s, with set-id or sticky bits; commit with --allow-setid if you mean it, or chmod it in the view", modeString(m.newMode))})
		case m.ownerChanged() && !opts.AllowOwner:
			out = append(out, Conflict{it.key, fmt.Sprintf("the draft gives it owner %s where the disk has %s; commit with --allow-owner if you mean it, or chown it in the view", m.newOwner, m.oldOwner)})
		case m.ownerChanged() && selfEUID != 0 && m.newOwner.Uid != selfEUID:
			out = append(out, Conflict{it.key, fmt.Sprintf("the draft gives it owner %s, and only root can give a file to another user; chown it in the view", m.newOwner)})
		}
	}
	return out
}

// ownerFor is the owner a commit must set on what it writes at key, nil
// when what it creates gets the right one anyway: the draft's when
// allowOwner and it differs, else the disk's (a file replaced through a
// temporary file would otherwise become the committer's). Without root,
// only the committer's own files can be given back. Must be called with
// d.mu held.
func (d *Draft) ownerFor(key string, e *entry, allowOwner bool) *Owner {
	it := item{key: key, e: *e, from: d.renamedFrom(key, e)}
	if n := d.inodes[e.Ino]; e.Ino != 0 && n != nil {
		it.n = *n
	}
	m := d.metaOf(it, d.owners)
	want := m.oldOwner
	if allowOwner && m.ownerChanged() {
		want = m.newOwner
	}
	if want == d.newOwner(key, d.owners) || selfEUID != 0 && want.Uid != selfEUID {
		return nil
	}
	return &want
}
