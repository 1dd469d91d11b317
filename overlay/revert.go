//go:build linux

package overlay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// Undo and the rollback of a failed commit revert a commit's ops, last
// first, and are journaled as the commit is: the record is written with
// its state (stateUndoing, stateRollingBack) before the disk is touched,
// and the count of ops reverted so far is kept in the commit's undo
// directory (a file rewritten in place after each op: no record per op),
// so a crash at any point is finished at the next open. Each op's revert
// can be run again after a crash cut it short.

// revertedFile counts the ops of a commit reverted so far.
func (d *Draft) revertedFile(id uint64) string {
	return filepath.Join(d.undoDir(id), "reverted")
}

func (d *Draft) reverted(id uint64) int {
	b, err := os.ReadFile(d.revertedFile(id))
	if err != nil || len(b) != 8 {
		return 0
	}
	return int(binary.LittleEndian.Uint64(b))
}

// revertLocked reverts ops [0, upto) of rec, last first, from where an
// interrupted revert stopped. Must be called with d.mu held.
func (d *Draft) revertLocked(rec *commitRecord, upto int) error {
	f, err := os.OpenFile(d.revertedFile(rec.ID), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	done := d.reverted(rec.ID)
	var count [8]byte
	p := &parents{root: d.w.dir}
	defer p.close()
	for i := upto - 1 - done; i >= 0; i-- {
		if testHookRevert != nil {
			testHookRevert(i)
		}
		op := rec.Ops[i]
		if err := d.revertOp(rec, op, p); err != nil {
			return fmt.Errorf("%s %q: %w", op.Kind, op.Path+op.From, err)
		}
		done++
		binary.LittleEndian.PutUint64(count[:], uint64(done))
		if _, err := f.WriteAt(count[:], 0); err != nil {
			return err
		}
	}
	d.syncDirs(rec)
	return d.w.disk.RemoveAll(diskName(rec.Stage))
}

// testHookRevert, when set by a test, runs before each op is reverted.
var testHookRevert func(i int)

// revertOp puts back what one op changed on disk (p: see restore).
func (d *Draft) revertOp(rec *commitRecord, op commitOp, p *parents) error {
	disk := d.w.disk
	switch op.Kind {
	case opWrite, opLink, opSymlink, opMknod, opRemove:
		return d.restore(rec, op, p)
	case opPlace:
		// Moved back to the staging directory, unless a revert cut
		// short did, or the place never happened.
		if ok, _ := d.diskHas(op.Stage); !ok {
			if ok, _ := d.diskHas(op.Path); ok {
				if err := disk.MkdirAll(diskName(rec.Stage), 0o700); err != nil {
					return err
				}
				if err := disk.Rename(diskName(op.Path), diskName(op.Stage)); err != nil {
					return err
				}
			}
		}
		if ok, _ := d.diskHas(op.Stage); ok && op.Mode.IsDir() && op.OldMode.IsDir() {
			// The commit gave the moved directory the draft's mode.
			if err := disk.Chmod(diskName(op.Stage), op.OldMode); err != nil {
				return err
			}
		}
		return d.restore(rec, op, p)
	case opStage:
		if ok, _ := d.diskHas(op.Stage); !ok {
			return nil // never staged, or already back
		}
		if err := disk.MkdirAll(diskName(parentOf(op.From)), 0o755); err != nil {
			return err
		}
		return disk.Rename(diskName(op.Stage), diskName(op.From))
	case opMkdir:
		if op.Backup != "" {
			return d.restore(rec, op, p)
		}
		disk.Remove(diskName(op.Path)) // kept if the user put files in it
		return nil
	case opChmod:
		if ok, _ := d.diskHas(op.Path); !ok {
			return nil
		}
		return disk.Chmod(diskName(op.Path), op.OldMode)
	}
	return fmt.Errorf("unknown op %q", op.Kind)
}

// rollbackLocked undoes a commit that failed at op failed (which may be
// partly applied), leaving the disk and the draft as before it: the
// draft still holds every entry, the disk gets back what the applied ops
// changed. Must be called with d.mu held.
func (d *Draft) rollbackLocked(rec *commitRecord, failed int, cause error) error {
	if rec.State != stateRollingBack {
		rec.State, rec.Upto, rec.Failure = stateRollingBack, failed+1, cause.Error()
		if err := d.st.write(&txn{reserved: true, commits: map[uint64]*commitRecord{rec.ID: rec}}); err != nil {
			return err
		}
		if err := d.st.sync(); err != nil {
			return err
		}
	}
	for _, op := range rec.Ops[:rec.Upto] {
		if op.Kind == opWrite {
			// Written by a batch whose renames did not all happen.
			d.w.disk.Remove(diskName(tempName(rec, op.Path)))
		}
	}
	if err := d.revertLocked(rec, rec.Upto); err != nil {
		return err
	}
	rec.State = stateFailed
	if err := d.st.write(&txn{reserved: true, commits: map[uint64]*commitRecord{rec.ID: rec}}); err != nil {
		return err
	}
	os.RemoveAll(d.undoDir(rec.ID))
	return d.st.sync()
}

// finishUndoLocked reverts every op of rec and puts its entries back in
// the draft; rec is journaled as stateUndoing. Must be called with d.mu
// held for writing.
func (d *Draft) finishUndoLocked(rec *commitRecord, src Source) error {
	if err := d.takeBackLinked(rec, false); err != nil {
		return fmt.Errorf("overlay: undo of commit %d: take back %w", rec.ID, err)
	}
	if err := d.revertLocked(rec, len(rec.Ops)); err != nil {
		return fmt.Errorf("overlay: undo of commit %d: %w", rec.ID, err)
	}
	keptDir := filepath.Join(d.undoDir(rec.ID), "data")
	kept, kerr := unix.Open(keptDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if kerr != nil && !errors.Is(kerr, unix.ENOENT) {
		return fmt.Errorf("overlay: undo of commit %d: restore draft content: %w", rec.ID, &fs.PathError{Op: "open", Path: keptDir, Err: kerr})
	}
	if kerr == nil {
		defer unix.Close(kept)
	}
	t := &txn{reserved: true}
	// A number the draft gave another inode since (a copy-up of the
	// same disk file) is not taken back: the inode gets a new one. In
	// order, so that a run again after a crash gives the same numbers.
	// An inode still at its path (the rest of a hunk commit's file)
	// keeps its own.
	atPath := map[uint64]bool{}
	for k, e := range rec.Entry {
		if cur := d.entries[k]; cur != nil && e.Ino != 0 && cur.Ino == e.Ino {
			atPath[e.Ino] = true
		}
	}
	number := map[uint64]uint64{}
	for _, ino := range slices.Sorted(maps.Keys(rec.Inode)) {
		number[ino] = ino
		if !atPath[ino] && !d.inoFree(ino) {
			number[ino] = d.allocIno(t)
		}
	}
	for ino, n := range rec.Inode {
		if !n.Data {
			continue
		}
		err := kerr // no directory: nothing left in it
		if err == nil {
			err = unix.Renameat(kept, keepName(ino), d.data, dataName(number[ino]))
		}
		if errors.Is(err, unix.ENOENT) {
			var st unix.Stat_t
			if d.statData(dataName(number[ino]), &st) == nil {
				continue // moved before a crash
			}
		}
		if err != nil {
			return fmt.Errorf("overlay: undo of commit %d: restore draft content of inode %x: %w", rec.ID, ino, err)
		}
	}
	for k, e := range rec.Entry {
		if e.Ino != 0 && number[e.Ino] != e.Ino {
			c := *e
			c.Ino = number[e.Ino]
			e = &c
		}
		t.putEntry(k, e)
	}
	for ino, n := range rec.Inode {
		t.putInode(number[ino], byNumber(n))
	}
	// Nothing reads an undone commit's ops and entries again: its record
	// keeps what the log shows, so that every later commit, undo and
	// collection, which read all the records, do not decode them.
	rec.State = stateUndone
	t.commits = map[uint64]*commitRecord{rec.ID: rec.summary(stateUndone)}
	t.addLog(LogEntry{Op: "undo", Paths: rec.Paths, Source: src})
	if err := d.finish(t); err != nil {
		return err
	}
	os.RemoveAll(d.undoDir(rec.ID))
	return d.st.sync()
}
