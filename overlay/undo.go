package overlay

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/afero"
)

// UndoResult says which commit undo reverted.
type UndoResult struct {
	ID    uint64   `json:"id"`
	Paths []string `json:"paths"`
}

// Undo reverts the last commit: the disk goes back to what it held and
// the reverted changes are in the draft again. It refuses with
// ErrDiskChanged when files the commit wrote changed since, and with
// ErrConflict when the draft has new changes at the same paths.
func (d *Draft) Undo(src Source) (*UndoResult, error) {
	d.commitMu.Lock()
	defer d.commitMu.Unlock()
	recs, err := d.st.commits()
	if err != nil {
		return nil, err
	}
	var rec *commitRecord
	for i := len(recs) - 1; i >= 0 && rec == nil; i-- {
		switch recs[i].State {
		case stateDone:
			rec = recs[i]
		case stateExpired:
			return nil, fmt.Errorf("overlay: draft %s: commit %d can no longer be undone: only the last %d commits keep what undo needs: %w",
				d.name, recs[i].ID, UndoKeep, ErrNothingToUndo)
		}
	}
	if rec == nil {
		return nil, fmt.Errorf("overlay: draft %s: %w", d.name, ErrNothingToUndo)
	}
	d.mu.Lock()
	err = d.undoLocked(rec, src)
	if err == nil {
		d.gcLocked(false)
	}
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	changes := make([]Change, 0, len(rec.Paths))
	for _, p := range rec.Paths {
		changes = append(changes, Change{Draft: d.name, Path: p, Kind: ChangeUndo, Source: src})
	}
	d.w.feed.publish(changes...)
	return &UndoResult{ID: rec.ID, Paths: rec.Paths}, nil
}

// undoLocked must be called with d.mu held for writing.
func (d *Draft) undoLocked(rec *commitRecord, src Source) error {
	var busy []string
	for k := range rec.Entry {
		if _, ok := d.entries[k]; ok {
			busy = append(busy, k)
		}
	}
	if len(busy) > 0 {
		return fmt.Errorf("overlay: undo of commit %d: the draft changed %s again since; commit or discard that first: %w",
			rec.ID, strings.Join(busy, ", "), ErrConflict)
	}
	if changed := d.changedSince(rec); len(changed) > 0 {
		return fmt.Errorf("overlay: undo of commit %d: %s changed on disk since; undo would lose that: %w",
			rec.ID, strings.Join(changed, ", "), ErrDiskChanged)
	}
	disk := d.w.disk
	for i := len(rec.Ops) - 1; i >= 0; i-- {
		op := rec.Ops[i]
		var err error
		switch op.Kind {
		case opWrite, opLink, opSymlink, opRemove:
			err = d.restore(rec, op)
		case opPlace:
			if err = disk.MkdirAll(diskName(rec.Stage), 0o700); err == nil {
				err = disk.Rename(diskName(op.Path), diskName(op.Stage))
			}
			if err == nil && op.Mode.IsDir() && op.OldMode.IsDir() {
				// The commit gave the moved directory the draft's mode.
				err = disk.Chmod(diskName(op.Stage), op.OldMode)
			}
			if err == nil {
				err = d.restore(rec, op)
			}
		case opStage:
			err = disk.Rename(diskName(op.Stage), diskName(op.From))
		case opMkdir:
			if op.Backup != "" {
				err = d.restore(rec, op)
			} else {
				disk.Remove(diskName(op.Path)) // kept if the user put files in it
			}
		case opChmod:
			err = disk.Chmod(diskName(op.Path), op.OldMode)
		}
		if err != nil {
			return fmt.Errorf("overlay: undo of commit %d: %s %q: %w", rec.ID, op.Kind, op.Path+op.From, err)
		}
	}
	disk.RemoveAll(diskName(rec.Stage))
	for ino, n := range rec.Inode {
		if !n.Data {
			continue
		}
		kept := filepath.Join(d.undoDir(rec.ID), "data", fmt.Sprintf("%x", ino))
		if err := os.Rename(kept, d.dataPath(ino)); err != nil {
			return fmt.Errorf("overlay: undo of commit %d: restore draft content: %w", rec.ID, err)
		}
	}
	t := &txn{}
	for k, e := range rec.Entry {
		t.putEntry(k, e)
	}
	for ino, n := range rec.Inode {
		t.putInode(ino, n)
	}
	rec.State = stateUndone
	t.commits = map[uint64]*commitRecord{rec.ID: rec}
	t.addLog(LogEntry{Op: "undo", Paths: rec.Paths, Source: src})
	if err := d.finish(t); err != nil {
		return err
	}
	os.RemoveAll(d.undoDir(rec.ID))
	return d.st.sync()
}

// changedSince lists the paths whose disk state is no longer what the
// commit left there.
func (d *Draft) changedSince(rec *commitRecord) []string {
	var out []string
	for _, op := range rec.Ops {
		ok, fi := d.diskHas(op.Path)
		same := true
		switch op.Kind {
		case opWrite, opLink:
			same = ok && fi.Mode().IsRegular() && d.diskHash(op.Path) == op.Hash
		case opSymlink:
			t, err := d.readlinkLower(op.Path)
			same = ok && err == nil && hashBytes([]byte(t)) == op.Hash
		case opPlace:
			same = ok
		case opMkdir:
			same = ok && fi.IsDir()
		case opRemove:
			same = !ok
		}
		if !same {
			out = append(out, op.Path)
		}
	}
	return out
}

// diskHash is the sha256 of a disk file, "" when unreadable.
func (d *Draft) diskHash(key string) string {
	f, err := d.w.disk.Open(diskName(key))
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// restore puts back at op.Path what the commit's backup of it holds, or
// removes what the op made there when there was nothing before.
func (d *Draft) restore(rec *commitRecord, op commitOp) error {
	disk := d.w.disk
	if op.Backup == "" {
		if op.Kind == opRemove {
			return nil
		}
		return disk.RemoveAll(diskName(op.Path))
	}
	src := filepath.Join(d.undoDir(rec.ID), "disk", op.Backup)
	tmp := tempName(rec, op.Path)
	disk.RemoveAll(diskName(tmp))
	if err := disk.MkdirAll(diskName(parentOf(op.Path)), 0o755); err != nil {
		return err
	}
	if err := copyTree(afero.NewOsFs(), src, disk, diskName(tmp)); err != nil {
		return err
	}
	if ok, fi := d.diskHas(op.Path); ok && (fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0) {
		if err := disk.RemoveAll(diskName(op.Path)); err != nil {
			return err
		}
	}
	return disk.Rename(diskName(tmp), diskName(op.Path))
}
