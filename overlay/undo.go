//go:build linux

package overlay

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
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
	heads, err := d.st.commitHeads()
	if err != nil {
		return nil, err
	}
	var rec *commitRecord
	for i := len(heads) - 1; i >= 0 && rec == nil; i-- {
		switch heads[i].State {
		case stateUndoing:
			// An undo that failed partway (a disk that refused):
			// finish it.
			r, err := d.st.commit(heads[i].ID)
			if err != nil {
				return nil, err
			}
			d.mu.Lock()
			err = d.finishUndoLocked(r, src)
			d.mu.Unlock()
			if err != nil {
				return nil, err
			}
			return &UndoResult{ID: r.ID, Paths: r.Paths}, nil
		case stateDone:
			if rec, err = d.st.commit(heads[i].ID); err != nil {
				return nil, err
			}
		case stateExpired:
			return nil, fmt.Errorf("overlay: draft %s: commit %d can no longer be undone: only the last %d commits keep what undo needs: %w",
				d.name, heads[i].ID, UndoKeep, ErrNothingToUndo)
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
	d.w.feed.publishPaced(changes)
	return &UndoResult{ID: rec.ID, Paths: rec.Paths}, nil
}

// undoLocked must be called with d.mu held for writing.
func (d *Draft) undoLocked(rec *commitRecord, src Source) error {
	busy := map[string]bool{}
	for k := range rec.Entry {
		if _, ok := d.entries[k]; ok && !d.keptAsLeftLocked(rec, k) {
			busy[k] = true
		}
		// A parent the draft removed or replaced since: the entry put
		// back would be below a name that is no directory.
		for p := parentOf(k); p != ""; p = parentOf(p) {
			if e, ok := d.entries[p]; ok && rec.Entry[p] == nil && (e.Kind != kindDir || e.Opaque || e.Origin != "") {
				busy[p] = true
			}
		}
	}
	// Below a directory the commit moved, the draft's entries since are
	// based on what the disk holds there now, which the undo moves
	// back: they would be based on nothing.
	moved := map[string]bool{}
	for k, e := range rec.Entry {
		if e.Kind == kindDir && e.Origin != "" {
			moved[k] = true
		}
	}
	if len(moved) > 0 {
		for k := range d.entries {
			for p := parentOf(k); p != "" && rec.Entry[k] == nil; p = parentOf(p) {
				if moved[p] {
					busy[k] = true
					break
				}
			}
		}
	}
	if len(busy) > 0 {
		return fmt.Errorf("overlay: undo of commit %d: the draft changed %s again since; commit or discard that first: %w",
			rec.ID, strings.Join(sortedKeys(busy), ", "), ErrConflict)
	}
	if changed := d.changedSince(rec); len(changed) > 0 {
		return fmt.Errorf("overlay: undo of commit %d: %s changed on disk since; undo would lose that: %w",
			rec.ID, strings.Join(changed, ", "), ErrDiskChanged)
	}
	// Journaled before the disk is touched: a crash from here on is
	// finished at the next open.
	rec.State = stateUndoing
	if err := d.st.write(&txn{reserved: true, commits: map[uint64]*commitRecord{rec.ID: rec}}); err != nil {
		return fmt.Errorf("overlay: undo of commit %d: %w", rec.ID, err)
	}
	if err := d.st.sync(); err != nil {
		return fmt.Errorf("overlay: undo of commit %d: %w", rec.ID, err)
	}
	if err := d.takeBackLinked(rec, true); err != nil {
		return fmt.Errorf("overlay: undo of commit %d: take back %w", rec.ID, err)
	}
	return d.finishUndoLocked(rec, src)
}

// changedSince lists the paths whose disk state is no longer what the
// commit left there.
func (d *Draft) changedSince(rec *commitRecord) []string {
	var out []string
	for _, op := range rec.Ops {
		ok, fi := d.diskHas(op.Path)
		same := true
		switch op.Kind {
		case opLink, opMknod:
			if op.Mode.Type()&specialTypes != 0 {
				same = ok && fi.Mode().Type() == op.Mode.Type()
				break
			}
			fallthrough
		case opWrite:
			same = ok && fi.Mode().IsRegular() && (unchangedSince(rec, op, fi) || d.diskHash(op.Path) == op.Hash)
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

// Undo must not lose what the user wrote over a committed file since,
// and reading every committed file back to compare its hash was most of
// an undo's checks. A commit records each
// written file's device, inode, size and mtime (fileStamp, taken on the
// temp file's descriptor once written: the rename keeps them), and the
// moment it was done (commitRecord.Stamped). A file that still has them
// and whose ctime is older than that moment by racyWindow was not
// changed since: any later change (a write, truncate, chmod, utimes to
// put the mtime back, a replacement by rename) sets the ctime to a later
// clock tick. A file changed in the last racyWindow before the moment is
// hashed (git's "racily clean" rule), as is every file of a record
// without stamps. A file the commit linked into place (commit_link.go)
// changes its ctime when the draft lets go of it, at the very end: it
// is stamped with that ctime, and is unchanged while it has it, if its
// content was written racyWindow before.

// fileStamp identifies a written file's content as the commit left it.
type fileStamp struct {
	Dev   uint64 `json:"d"`
	Ino   uint64 `json:"i"`
	Size  int64  `json:"s"`
	Mtime int64  `json:"m"` // Unix ns
	// Ctime, of a file a commit linked into place, is its ctime once the
	// draft let go of it (see releaseLinked); 0 otherwise.
	Ctime int64 `json:"c,omitempty"`
}

// stampFile stamps an open file.
func stampFile(f *os.File) (*fileStamp, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return &fileStamp{Dev: st.Dev, Ino: st.Ino, Size: st.Size, Mtime: st.Mtim.Nano()}, nil
}

// unchangedSince reports whether fi, the disk object at op.Path, is
// surely what op wrote, from its stamp alone; false when that cannot be
// told without reading it.
func unchangedSince(rec *commitRecord, op commitOp, fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || op.Stat == nil || rec.Stamped == 0 {
		return false
	}
	if st.Dev != op.Stat.Dev || st.Ino != op.Stat.Ino || st.Size != op.Stat.Size || st.Mtim.Nano() != op.Stat.Mtime {
		return false
	}
	if c := op.Stat.Ctime; c != 0 {
		// Linked: the ctime as the commit left it, and content written
		// long enough before that a write since, in the same clock tick
		// as the commit's last change, could not leave the mtime alone.
		return st.Ctim.Nano() == c && op.Stat.Mtime < c-racyWindow.Nanoseconds()
	}
	return st.Ctim.Nano() < rec.Stamped-racyWindow.Nanoseconds()
}

// testHookDiskHash, when set by a test, is called with each file undo
// reads back.
var testHookDiskHash func(key string)

// diskHash is the sha256 of a disk file, "" when unreadable.
func (d *Draft) diskHash(key string) string {
	if testHookDiskHash != nil {
		testHookDiskHash(key)
	}
	f, err := d.w.disk.OpenFile(diskName(key), os.O_RDONLY|syscall.O_NONBLOCK, 0) // a FIFO swapped in: no wait
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := copyPooled(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// restore puts back at op.Path what the commit's backup of it holds, or
// removes what the op made there when there was nothing before (by name
// in its directory, which p keeps open, on the OS's disk).
func (d *Draft) restore(rec *commitRecord, op commitOp, p *parents) error {
	disk := d.w.disk
	if op.Backup == "" {
		switch {
		case op.Kind == opRemove:
			return nil
		case d.w.osDisk:
			return p.remove(op.Path)
		}
		return disk.RemoveAll(diskName(op.Path))
	}
	src := filepath.Join(d.undoDir(rec.ID), "disk", op.Backup)
	tmp := tempName(rec, op.Path)
	disk.RemoveAll(diskName(tmp))
	if err := disk.MkdirAll(diskName(parentOf(op.Path)), 0o755); err != nil {
		return err
	}
	if err := copyTree(afero.NewOsFs(), src, disk, diskName(tmp), nil); err != nil {
		return err
	}
	// rename(2) puts a file over a file, not a directory over one.
	bfi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if ok, fi := d.diskHas(op.Path); ok && (fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 || bfi.IsDir()) {
		if err := disk.RemoveAll(diskName(op.Path)); err != nil {
			return err
		}
	}
	return disk.Rename(diskName(tmp), diskName(op.Path))
}
