//go:build linux

package overlay

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

// A commit hard-links a draft file into the workspace instead of
// copying it, where the draft lets go of the file with the commit (every
// name of it is committed, none in part, and no process has it open
// for writing): the draft's data file becomes the disk file. That spares
// creating and filling a temp file, and the second name that kept a
// copy for undo: undo takes the file back from its path, which its check
// made sure still holds what the commit left there (or the same
// content). The link is made once the batch's sync made the content
// durable, by the path's own name where nothing is there, else by a
// temp name renamed over what is. The draft's name for the file goes
// before the commit is stamped done (releaseLinked), so the file has
// one name. Where no link can be made (the state directory on another
// file system or mount), the directory has a default ACL (a link would
// not take it), or the data file has another name, the op copies
// instead and keeps the data file for undo.

// linkOpsLocked marks the write ops of rec that may link their data file
// into place and returns their inodes. Must be called with d.mu held.
func (d *Draft) linkOpsLocked(rec *commitRecord, chosen map[string]*entry) map[uint64]bool {
	if !d.w.osDisk {
		return nil
	}
	names := map[uint64]int{} // names the commit takes out of the draft
	for k, e := range chosen {
		if e.Ino != 0 && rec.Keep[k] == nil {
			names[e.Ino]++
		}
	}
	linked := map[uint64]bool{}
	for i := range rec.Ops {
		op := &rec.Ops[i]
		if op.Kind != opWrite || op.Blob != "" || op.Ino == 0 {
			continue
		}
		if n := d.inodes[op.Ino]; n == nil || !n.Data || d.writers[op.Ino] > 0 || names[op.Ino] != d.links[op.Ino] {
			continue
		}
		op.Link = true
		linked[op.Ino] = true
	}
	return linked
}

// keepName is the name of inode ino's content in a commit's undo
// directory.
func keepName(ino uint64) string { return fmt.Sprintf("%x", ino) }

// keepData keeps draft inode ino's data file for undo: a second name in
// the commit's undo directory, kept (a descriptor).
func (d *Draft) keepData(ino uint64, n *inode, kept int) error {
	if err := unix.Linkat(d.data, n.dataName(ino), kept, keepName(ino), 0); err != nil && err != unix.EEXIST {
		return &fs.PathError{Op: "link", Path: d.dataPath(n.dataName(ino)), Err: err}
	}
	return nil
}

// keepForUndo keeps draft inode ino's data file in rec's undo directory.
func (d *Draft) keepForUndo(rec *commitRecord, ino uint64) error {
	keptDir := filepath.Join(d.undoDir(rec.ID), "data")
	kept, err := unix.Open(keptDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: keptDir, Err: err}
	}
	defer unix.Close(kept)
	return d.keepData(ino, rec.Inode[ino], kept)
}

// errNoLink: an op cannot link its data file into place.
var errNoLink = errors.New("no link")

// prepareLink readies a link op's data file as writeTemp does a temp
// file: gives it its owner (when set) and mode, keeps its hash and stamp
// in op and its file system in syncs, for placeLink to link it into
// place once synced; errNoLink when it must be copied instead.
func (d *Draft) prepareLink(rec *commitRecord, op *commitOp, p *parents, syncs map[uint64]int) error {
	src, err := d.openData(rec.Inode[op.Ino].dataName(op.Ino), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		// Let go of by the draft before a crash (see releaseLinked):
		// the op was placed.
		return d.linkedBefore(op, p, syncs)
	}
	if err != nil {
		return err
	}
	defer src.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &st); err != nil {
		return &fs.PathError{Op: "fstat", Path: src.Name(), Err: err}
	}
	if st.Nlink != 1 {
		// A name elsewhere (or a link a crash left at the path or its
		// temp name) would share what the commit writes.
		return errNoLink
	}
	if ok, err := d.linkableDir(rec, op, p, src); err != nil || !ok {
		if err == nil {
			err = errNoLink
		}
		return err
	}
	h := sha256.New()
	if _, err := copyPooled(h, src); err != nil {
		return err
	}
	return settleWritten(src, h, op, syncs)
}

// linkableDir reports whether data files may be linked into op's
// directory, asked once a directory (p caches it): it has no default ACL
// (which a file made there takes and a link lacks), and a link of src,
// op's data file, can be made there (else EXDEV: the state directory is
// on another file system or mount). The group a set-group-ID directory
// gives is the owner the planner already sets (Draft.newOwner).
func (d *Draft) linkableDir(rec *commitRecord, op *commitOp, p *parents, src *os.File) (bool, error) {
	dir, base, err := p.of(op.Path)
	if err != nil || p.linkable != nil {
		return p.linkable != nil && *p.linkable, err
	}
	acl, err := dir.DefaultACL()
	if err != nil {
		return false, err
	}
	ok := !acl
	if ok {
		tmp := tempBase(rec, base)
		dir.Remove(tmp) // left by a crash, with the data file's nlink 1: not its link
		switch err := dir.LinkFrom(d.data, filepath.Base(src.Name()), tmp); {
		case errors.Is(err, unix.EXDEV):
			ok = false
		case err != nil:
			return false, err
		default:
			if err := dir.Remove(tmp); err != nil {
				return false, err
			}
		}
	}
	p.linkable = &ok
	return ok, nil
}

// placeLink links a link op's data file, synced, at its path: by its
// name where nothing is there, else to the temp name and renamed over
// what is (linkableDir made sure a link can be made there).
func (d *Draft) placeLink(rec *commitRecord, op *commitOp, p *parents) error {
	dir, base, err := p.of(op.Path)
	if err != nil {
		return err
	}
	data := rec.Inode[op.Ino].dataName(op.Ino)
	err = dir.LinkFrom(d.data, data, base)
	if errors.Is(err, fs.ErrExist) {
		tmp := tempBase(rec, base)
		if err = dir.LinkFrom(d.data, data, tmp); errors.Is(err, fs.ErrExist) {
			if err = dir.Remove(tmp); err == nil { // left by a crash
				err = dir.LinkFrom(d.data, data, tmp)
			}
		}
		if err == nil {
			return d.placeTemp(rec, op, p)
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := dir.Lstat(base); serr == nil {
			err = nil // placed before a crash (see linkedBefore)
		}
	}
	if err != nil {
		return err
	}
	return d.setXattrs(op)
}

// errLinkedGone: a link op replayed finds neither its data file nor its
// file at the path.
func errLinkedGone(err error) error {
	return fmt.Errorf("neither the draft's file nor the commit's is there: %w", err)
}

// linkedBefore stamps a link op that a crash interrupted after the draft
// let go of its data file: the file is at its path.
func (d *Draft) linkedBefore(op *commitOp, p *parents, syncs map[uint64]int) error {
	dir, base, err := p.at(op.Path, false)
	if err != nil {
		return err
	}
	if dir == nil {
		return errLinkedGone(fs.ErrNotExist)
	}
	f, err := dir.Open(base, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return errLinkedGone(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := copyPooled(h, f); err != nil {
		return err
	}
	stamp, err := stampFile(f)
	if err != nil {
		return err
	}
	op.Hash, op.Stat = hex.EncodeToString(h.Sum(nil)), stamp
	return keepDev(f, stamp.Dev, syncs)
}

// releaseLinked removes the draft's names of the data files rec linked
// into place, once every op is placed and before the commit is stamped
// done, and stamps each file's ctime after it: the unlink moves the
// ctime, so the stamp of the commit's end could not tell a change since
// from it (see unchangedSince). A crash before the commit is stamped
// replays it (see linkedBefore). A data file with handles open stays
// for them (see Draft.orphan) and goes when they close, unstamped. Must
// be called with d.mu held for writing. It returns the inodes whose
// data file it removed.
func (d *Draft) releaseLinked(rec *commitRecord) map[uint64]bool {
	var ops []*commitOp
	d.filesMu.Lock()
	for i := range rec.Ops {
		if op := &rec.Ops[i]; op.Kind == opWrite && op.Link && op.Stat != nil && d.handles[op.Ino] == 0 {
			ops = append(ops, op)
		}
	}
	d.filesMu.Unlock() // no handle opens meanwhile: d.mu is held
	p := &parents{root: d.w.dir}
	defer p.close()
	unlinked := make(map[uint64]bool, len(ops))
	for _, op := range ops {
		if unix.Unlinkat(d.data, rec.Inode[op.Ino].dataName(op.Ino), 0) == nil {
			unlinked[op.Ino] = true
		}
		dir, name, err := p.at(op.Path, false)
		if dir == nil || err != nil {
			continue
		}
		if st, err := dir.Lstat(name); err == nil && st.Dev == op.Stat.Dev && st.Ino == op.Stat.Ino {
			op.Stat.Ctime = st.Ctim.Nano()
		}
	}
	return unlinked
}

// takeBackLinked moves the files rec linked into place back, before the
// disk is reverted: to the draft's data directory under their number,
// or, where the draft gave the number to another inode since, to the
// undo directory, which finishUndoLocked takes the rest from; a file
// that has other names on disk is copied there instead (the draft must
// not share it). fresh: nothing of the undo has
// run, and its check found the file at each path as the commit left it
// or with the same content. Else it is run again after a crash, which
// may have come after files were taken or paths reverted: only a path
// that still holds the very file the commit linked is taken.
func (d *Draft) takeBackLinked(rec *commitRecord, fresh bool) error {
	keptDir := filepath.Join(d.undoDir(rec.ID), "data")
	kept := -1
	defer func() {
		if kept >= 0 {
			unix.Close(kept)
		}
	}()
	p := &parents{root: d.w.dir}
	defer p.close()
	for _, op := range rec.Ops {
		if op.Kind != opWrite || !op.Link {
			continue
		}
		if kept < 0 {
			if err := os.MkdirAll(keptDir, 0o700); err != nil {
				return err
			}
			fd, err := unix.Open(keptDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				return &fs.PathError{Op: "open", Path: keptDir, Err: err}
			}
			kept = fd
		}
		var st unix.Stat_t
		if !fresh && unix.Fstatat(kept, keepName(op.Ino), &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			continue // taken before a crash
		}
		dir, name, err := p.at(op.Path, false)
		var sys *unix.Stat_t
		switch {
		case err == nil && dir == nil:
			err = &fs.PathError{Op: "lstat", Path: op.Path, Err: unix.ENOENT}
		case err == nil:
			sys, err = dir.Lstat(name)
		}
		if !fresh && (err != nil || op.Stat == nil || sys.Dev != op.Stat.Dev || sys.Ino != op.Stat.Ino) {
			continue // taken, or reverted, before a crash
		}
		if err != nil {
			return err
		}
		if sys.Mode&unix.S_IFMT != unix.S_IFREG {
			return fmt.Errorf("%s: not the file the commit wrote: %w", op.Path, ErrDiskChanged)
		}
		switch {
		case sys.Nlink == 1 && d.inoFree(op.Ino):
			// Where finishUndoLocked would move it next (the draft
			// gave no other inode its number since): moved once.
			err = dir.MoveOut(name, d.data, dataName(op.Ino))
		case sys.Nlink == 1:
			err = dir.MoveOut(name, kept, keepName(op.Ino))
		default:
			err = copyTree(d.w.disk, diskName(op.Path), afero.NewOsFs(), filepath.Join(keptDir, keepName(op.Ino)), nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
