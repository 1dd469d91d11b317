//go:build linux

package overlay

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay/beneath"
	"github.com/draftfs/draftfs/overlay/internal/textmerge"
)

// CommitOptions choose what a commit applies and how.
type CommitOptions struct {
	// Keys limits the commit to these paths and what is below them (nil:
	// the whole draft). Renames come with their sources, paths with the
	// new directories they need.
	Keys []string
	// Hunks, when set, are the IDs of the hunks to commit (see Hunk)
	// instead of Keys: the files they belong to are committed with
	// those hunks only, the rest of their change left in the draft.
	Hunks []string
	// Force applies conflicting paths anyway: the draft wins.
	Force bool
	// DryRun reports what would happen and changes nothing.
	DryRun bool
	// AllowSetid commits set-uid, set-gid and sticky bits; without it a
	// path the draft gives them refuses the commit (Force does not).
	AllowSetid bool
	// AllowOwner commits the draft's owner where it differs from the
	// disk's; without it such a path refuses the commit.
	AllowOwner bool
	Source     Source
	// Progress, when set, is called as ops complete.
	Progress func(done, total int)
}

// CommitResult says what a commit did, or would do, or why it did not.
type CommitResult struct {
	ID        uint64        `json:"id,omitempty"`
	DryRun    bool          `json:"dryRun,omitempty"`
	Applied   []StatusEntry `json:"applied"`
	Merged    []string      `json:"merged,omitempty"`
	Conflicts []Conflict    `json:"conflicts,omitempty"`
}

// Commit applies the draft (or opts.Keys) to disk. Conflicting changes
// that merge cleanly are merged; any other conflict refuses the whole
// commit (ErrConflict, nothing written) unless opts.Force. What the
// commit overwrites or removes is kept for [Draft.Undo].
func (d *Draft) Commit(opts CommitOptions) (*CommitResult, error) {
	res, err := d.commit(opts)
	if res != nil {
		d.markIgnored(res.Applied)
	}
	return res, err
}

func (d *Draft) commit(opts CommitOptions) (*CommitResult, error) {
	d.commitMu.Lock()
	defer d.commitMu.Unlock()
	var files map[string]*hunkFile
	if len(opts.Hunks) > 0 {
		var err error
		if files, err = d.hunkFiles(opts.Hunks); err != nil {
			return nil, err
		}
	}
	d.mu.Lock()
	var parts map[string]*partialFile
	if len(opts.Hunks) > 0 {
		ch, err := d.chooseHunksLocked(opts.Hunks, files)
		if err != nil {
			d.mu.Unlock()
			return nil, err
		}
		opts.Keys, parts = ch.keys, ch.partial
	}
	chosen := d.chooseLocked(opts.Keys, true)
	res := &CommitResult{DryRun: opts.DryRun, Applied: []StatusEntry{}}
	status, err := d.statusOf(chosen)
	if err != nil {
		d.mu.Unlock()
		return nil, err
	}
	res.Applied = status
	noop := d.noopLocked(chosen)
	merged, conflicts, err := d.checkLocked(chosen, noop)
	if err != nil {
		d.mu.Unlock()
		return nil, err
	}
	linked := d.linkedParentsLocked(chosen)
	privileged := d.privilegedLocked(chosen, opts)
	res.Conflicts = withConflicts(withConflicts(conflicts, privileged), linked)
	res.Merged = sortedKeys(merged)
	for k, p := range parts {
		merged[k] = textmerge.Apply(p.old, p.cur, p.chosen)
	}
	if len(chosen) == 0 || opts.DryRun {
		d.mu.Unlock()
		return res, nil
	}
	if len(status) == 0 && len(linked) == 0 {
		// Only entries that change nothing (see same): drop them, so
		// the view shows what the user has, and write nothing.
		publish, err := d.dropLocked(sortedKeys(chosen), opts.Source)
		d.mu.Unlock()
		if err != nil {
			return nil, err
		}
		publish()
		return res, nil
	}
	if len(linked) > 0 {
		d.mu.Unlock()
		return res, fmt.Errorf("overlay: commit refused, %d path(s) below a directory that is a symlink on disk now, nothing written: %w", len(linked), ErrConflict)
	}
	if len(privileged) > 0 {
		d.mu.Unlock()
		return res, fmt.Errorf("overlay: commit refused, %d path(s) with set-id bits or another owner, nothing written: %w", len(privileged), ErrConflict)
	}
	if len(res.Conflicts) > 0 && !opts.Force {
		d.mu.Unlock()
		return res, fmt.Errorf("overlay: commit refused, %d conflicting path(s), nothing written: %w", len(res.Conflicts), ErrConflict)
	}
	rec, err := d.prepareLocked(chosen, merged, noop, parts, opts)
	if err != nil {
		d.mu.Unlock()
		return nil, err
	}
	res.ID = rec.ID
	err = d.runLocked(rec, opts.Progress)
	if err == nil {
		// Best effort: the commit is done; what is left is collected
		// next time.
		d.gcLocked(false)
	}
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	changes := make([]Change, 0, len(rec.Paths))
	for _, p := range rec.Paths {
		changes = append(changes, Change{Draft: d.name, Path: p, Kind: ChangeCommit, Source: opts.Source})
	}
	d.w.feed.publish(changes...)
	return res, nil
}

// statusOf reports chosen entries as Status does. Must be called with
// d.mu held.
func (d *Draft) statusOf(chosen map[string]*entry) ([]StatusEntry, error) {
	return d.statusEntries(d.changesLocked(), func(it item) bool {
		_, ok := chosen[it.key]
		return ok
	})
}

// undoDir is where a commit keeps what undo needs.
func (d *Draft) undoDir(id uint64) string {
	return filepath.Join(d.dir, "undo", fmt.Sprint(id))
}

// prepareLocked writes the commit's journal, backups and undo copies of
// the entries; nothing on disk is touched yet. Must be called with d.mu
// held.
func (d *Draft) prepareLocked(chosen map[string]*entry, merged map[string][]byte, noop map[string]bool, parts map[string]*partialFile, opts CommitOptions) (*commitRecord, error) {
	id, err := d.st.nextCommitID()
	if err != nil {
		return nil, fmt.Errorf("overlay: commit: %w", err)
	}
	rec := &commitRecord{
		ID: id, Time: time.Now().UTC().Format(time.RFC3339Nano), State: stateStaging, Source: opts.Source,
		Stage: fmt.Sprintf(".draftfs-commit-%d", id),
		Entry: chosen, Inode: map[uint64]*inode{},
	}
	// Only the record below takes the id: a crash may have left files
	// under it before.
	if err := os.RemoveAll(d.undoDir(id)); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(d.undoDir(id), "data"), 0o700); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(d.undoDir(id), "disk"), 0o700); err != nil {
		return nil, err
	}
	rec.Paths = sortedKeys(chosen)
	for _, k := range rec.Paths {
		e := chosen[k]
		if e.Ino == 0 {
			continue
		}
		n := d.inodes[e.Ino]
		rec.Inode[e.Ino] = n
		if n.Data {
			keep := filepath.Join(d.undoDir(id), "data", fmt.Sprintf("%x", e.Ino))
			if _, err := os.Lstat(keep); err == nil {
				continue
			}
			// A link shares the content; a file still open for writing
			// changes on after the commit, so undo gets a copy of it.
			link := os.Link
			if d.writers[e.Ino] > 0 {
				link = copyFile
			}
			if err := link(d.dataPath(e.Ino), keep); err != nil {
				return nil, fmt.Errorf("overlay: commit: keep %q for undo: %w", k, err)
			}
		}
	}
	if err := d.planLocked(rec, chosen, merged, noop, opts.AllowOwner); err != nil {
		return nil, err
	}
	if err := d.keepPartsLocked(rec, parts); err != nil {
		return nil, err
	}
	if err := d.st.write(&txn{commits: map[uint64]*commitRecord{id: rec}}); err != nil {
		return nil, fmt.Errorf("overlay: commit: record: %w", err)
	}
	return rec, d.st.sync()
}

// testHookOp, when set by a test, runs before each op of a commit; an
// error stops the commit there as a crash would.
var testHookOp func(i int) error

// runLocked applies a prepared commit's ops and then drops the
// committed entries from the draft. Must be called with d.mu held.
func (d *Draft) runLocked(rec *commitRecord, progress func(int, int)) error {
	var err error
	if d.shareableLocked(rec) {
		// Readers may look while the disk is written; nothing changes
		// the draft meanwhile (see draftLock).
		d.committing.Store(rec.ID)
		d.mu.share()
		err = d.applyOps(rec, progress)
		d.mu.reclaim()
		d.committing.Store(0)
	} else {
		err = d.applyOps(rec, progress)
	}
	if err != nil {
		return err
	}
	d.syncDirs(rec)
	d.w.disk.RemoveAll(diskName(rec.Stage))
	t := &txn{}
	for k := range rec.Entry {
		if kp := rec.Keep[k]; kp != nil {
			e, err := d.rebaseLocked(k, rec.Entry[k], kp)
			if err != nil {
				return err
			}
			t.putEntry(k, e)
			continue
		}
		t.putEntry(k, nil)
		if e := d.entries[k]; e != nil && e.Kind == kindFile && d.writers[e.Ino] > 0 {
			// Still open for writing: what is written from now on must
			// not be lost, so the file stays in the draft, its base now
			// the committed content.
			b, err := d.recordBase(k, true)
			if err != nil {
				return err
			}
			t.putEntry(k, &entry{Kind: kindFile, Ino: e.Ino, Base: b})
		}
	}
	rec.State = stateDone
	t.commits = map[uint64]*commitRecord{rec.ID: rec}
	t.addLog(LogEntry{Op: "commit", Paths: rec.Paths, Source: rec.Source})
	if err := d.finish(t); err != nil {
		return err
	}
	return d.st.sync()
}

// failedLocked rolls back a commit whose op i failed with err, when ops
// up to last may have been applied in part, and says so.
func (d *Draft) failedLocked(rec *commitRecord, i, last int, err error) error {
	op := rec.Ops[i]
	err = fmt.Errorf("overlay: commit %d: %s %q: %w", rec.ID, op.Kind, op.Path+op.From, err)
	if rerr := d.rollbackLocked(rec, last, err); rerr != nil {
		return fmt.Errorf("%w; rolling it back failed too: %v (the next draftfs start tries again)", err, rerr)
	}
	return fmt.Errorf("%w: rolled back, the disk and the draft are as they were", err)
}

// shareableLocked reports whether readers of the draft may look while
// rec's ops run: what the view shows of the paths the ops write is the
// draft's own entries then, as long as no op moves a disk object that a
// renamed entry of the draft shows (stage and place ops, entries with
// an origin). Must be called with d.mu held.
func (d *Draft) shareableLocked(rec *commitRecord) bool {
	for _, op := range rec.Ops {
		if op.Kind == opStage || op.Kind == opPlace {
			return false
		}
	}
	for _, e := range d.entries {
		if e.Origin != "" {
			return false
		}
	}
	return true
}

// applyOps applies rec's ops in order, from where a crash left them; an
// op that fails rolls the commit back. It reads nothing of the draft's
// maps (see shareableLocked).
func (d *Draft) applyOps(rec *commitRecord, progress func(int, int)) error {
	total := len(rec.Ops)
	for i := 0; i < len(rec.Ops); i++ {
		op := &rec.Ops[i]
		if op.Kind != opStage && rec.State == stateStaging {
			rec.State = statePlacing
			if err := d.st.write(&txn{commits: map[uint64]*commitRecord{rec.ID: rec}}); err != nil {
				return err
			}
		}
		if op.Kind == opStage && rec.State != stateStaging {
			continue
		}
		if op.Kind == opWrite && d.w.osDisk {
			j := i + 1
			for j < len(rec.Ops) && j-i < writeBatch && (rec.Ops[j].Kind == opWrite || rec.Ops[j].Kind == opMkdir) {
				j++
			}
			if err := d.writeOps(rec, i, j, progress); err != nil {
				return err
			}
			i = j - 1
			continue
		}
		if testHookOp != nil {
			if err := testHookOp(i); err != nil {
				return err
			}
		}
		if err := d.applyOp(rec, op); err != nil {
			return d.failedLocked(rec, i, i, err)
		}
		if progress != nil {
			progress(i+1, total)
		}
	}
	return nil
}

// applyOp performs one op; each can be run again after a crash.
func (d *Draft) applyOp(rec *commitRecord, op *commitOp) error {
	disk := d.w.disk
	switch op.Kind {
	case opStage:
		if ok, _ := d.diskHas(op.From); !ok {
			return nil // moved before a crash
		}
		if err := disk.MkdirAll(diskName(rec.Stage), 0o700); err != nil {
			return err
		}
		return disk.Rename(diskName(op.From), diskName(op.Stage))
	case opPlace:
		if ok, _ := d.diskHas(op.Stage); !ok {
			return nil
		}
		if err := d.clear(op.Path); err != nil {
			return err
		}
		if err := disk.MkdirAll(diskName(parentOf(op.Path)), 0o755); err != nil {
			return err
		}
		if err := disk.Rename(diskName(op.Stage), diskName(op.Path)); err != nil {
			return err
		}
		if op.Mode.IsDir() {
			return disk.Chmod(diskName(op.Path), op.Mode)
		}
		return nil
	case opRemove:
		return disk.RemoveAll(diskName(op.Path))
	case opMkdir:
		if ok, fi := d.diskHas(op.Path); ok && !fi.IsDir() {
			if err := d.clear(op.Path); err != nil {
				return err
			}
		} else if ok && op.Backup != "" {
			// Opaque: what the directory held is gone in the draft.
			if err := disk.RemoveAll(diskName(op.Path)); err != nil {
				return err
			}
		}
		if err := disk.MkdirAll(diskName(op.Path), 0o755); err != nil {
			return err
		}
		if err := chown(disk, op.Path, op.Owner); err != nil {
			return err
		}
		return disk.Chmod(diskName(op.Path), op.Mode)
	case opChmod:
		if err := chown(disk, op.Path, op.Owner); err != nil {
			return err
		}
		return disk.Chmod(diskName(op.Path), op.Mode)
	case opWrite:
		if err := d.writeTemp(rec, op, nil); err != nil {
			return err
		}
		return d.placeTemp(rec, op)
	case opLink:
		return d.linkDisk(rec, op)
	case opSymlink:
		op.Hash = hashBytes([]byte(op.Target))
		return d.symlinkDisk(rec, op.Path, op.Target, op.Owner)
	case opMknod:
		return d.mknodDisk(rec, op)
	}
	return fmt.Errorf("unknown op %q", op.Kind)
}

// clear removes what is at key on disk when it is in the way of a
// rename or a file (its backup was taken when the commit was prepared).
func (d *Draft) clear(key string) error {
	if ok, _ := d.diskHas(key); !ok {
		return nil
	}
	return d.w.disk.RemoveAll(diskName(key))
}

// tempName is a hidden name next to key for an atomic replace.
func tempName(rec *commitRecord, key string) string {
	return join(parentOf(key), fmt.Sprintf(".%s.draftfs-%d", baseOf(key), rec.ID))
}

// chown gives what is at key (a symlink itself) its owner, when one is
// set. Before any chmod: a chown clears set-id bits.
func chown(disk afero.Fs, key string, o *Owner) error {
	if o == nil {
		return nil
	}
	return disk.Chown(diskName(key), o.Uid, o.Gid)
}

// linkDisk makes op.Path a hard link of op.From, atomically; where the
// disk layer cannot link, a copy.
func (d *Draft) linkDisk(rec *commitRecord, op *commitOp) error {
	special := op.Mode.Type()&specialTypes != 0
	if special && !d.w.osDisk {
		return fmt.Errorf("the disk layer cannot link special files")
	}
	if d.w.osDisk {
		tmp := tempName(rec, op.Path)
		d.w.dir.Remove(tmp)
		if err := d.w.dir.Link(op.From, tmp); err != nil {
			return err
		}
		if err := d.w.dir.Rename(tmp, op.Path); err != nil {
			d.w.dir.Remove(tmp)
			return err
		}
		if special {
			return nil // a FIFO or device node: never opened
		}
		b, err := afero.ReadFile(d.w.disk, diskName(op.Path))
		op.Hash = hashBytes(b)
		return err
	}
	f, err := d.w.disk.Open(diskName(op.From))
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	op.Hash, err = d.writeDisk(rec, op.Path, fi.Mode(), nil, f)
	return err
}

// symlinkDisk makes key a symlink, atomically.
func (d *Draft) symlinkDisk(rec *commitRecord, key, target string, owner *Owner) error {
	l, ok := d.w.disk.(afero.Linker)
	if !ok {
		return fmt.Errorf("the disk layer cannot make symlinks")
	}
	tmp := tempName(rec, key)
	d.w.disk.Remove(diskName(tmp))
	if err := l.SymlinkIfPossible(target, diskName(tmp)); err != nil {
		return err
	}
	if err := chown(d.w.disk, tmp, owner); err != nil {
		return err
	}
	if ok, fi := d.diskHas(key); ok && fi.IsDir() {
		if err := d.w.disk.RemoveAll(diskName(key)); err != nil {
			return err
		}
	}
	return d.w.disk.Rename(diskName(tmp), diskName(key))
}

// mknodDisk makes op.Path a FIFO or device node, atomically.
func (d *Draft) mknodDisk(rec *commitRecord, op *commitOp) error {
	tmp := tempName(rec, op.Path)
	d.w.disk.Remove(diskName(tmp))
	if err := mknodOn(d.w.disk, diskName(tmp), op.Mode, op.Rdev); err != nil {
		return err
	}
	if err := chown(d.w.disk, tmp, op.Owner); err != nil {
		return err
	}
	if ok, fi := d.diskHas(op.Path); ok && fi.IsDir() {
		if err := d.w.disk.RemoveAll(diskName(op.Path)); err != nil {
			return err
		}
	}
	return d.w.disk.Rename(diskName(tmp), diskName(op.Path))
}

// mknodOn makes a FIFO or device node, with exactly mode's permission
// bits, on the disk layer or the OS's file system (the state
// directory's).
func mknodOn(fsys afero.Fs, name string, mode fs.FileMode, rdev uint64) error {
	switch v := fsys.(type) {
	case beneath.FS:
		return v.R.Mknod(beneath.Key(name), mode, rdev)
	case *afero.OsFs:
		if err := unix.Mknod(name, beneath.UnixMode(mode)&unix.S_IFMT|0o600, int(rdev)); err != nil {
			return &fs.PathError{Op: "mknod", Path: name, Err: err}
		}
		return os.Chmod(name, mode&permBits)
	}
	return fmt.Errorf("%s: the disk layer cannot make special files", name)
}

// syncDirs makes the renames of a commit (or of its revert) durable:
// the file system of every directory it touched is synced once (syncfs;
// a directory's own fsync where there is no descriptor), not each
// directory: 100 new directories cost 100 journal commits.
func (d *Draft) syncDirs(rec *commitRecord) {
	seen := map[string]bool{}
	syncs := map[uint64]int{}
	for _, op := range rec.Ops {
		for _, k := range []string{op.Path, op.From} {
			if k == "" {
				continue
			}
			p := parentOf(k)
			if seen[p] {
				continue
			}
			seen[p] = true
			if f, err := d.w.disk.Open(diskName(p)); err == nil {
				if keepFS(f, syncs) != nil {
					f.Sync()
				}
				f.Close()
			}
		}
	}
	for _, fd := range syncs {
		unix.Syncfs(fd)
		unix.Close(fd)
	}
}

// recover finishes what a crash interrupted: a commit (or, when it
// cannot be finished now, rolls it back), the rollback of a failed
// commit, an undo. One that can be neither finished nor rolled back is
// marked failed with why, so that the draft still opens.
func (d *Draft) recover() error {
	recs, err := d.st.commits()
	if err != nil {
		return err
	}
	for i, rec := range recs {
		d.mu.Lock()
		if unfinished(rec) && i < len(recs)-1 {
			// A later commit was made since (this one's rollback
			// failed and the user went on): replaying it now would
			// undo what came after.
			err = fmt.Errorf("left unfinished before commit %d", recs[len(recs)-1].ID)
		} else {
			err = d.resumeLocked(rec)
		}
		d.mu.Unlock()
		if err == nil {
			continue
		}
		d.mu.Lock()
		rec.State, rec.Failure = stateFailed, fmt.Sprintf("interrupted, and then: %v", err)
		err = d.st.write(&txn{reserved: true, commits: map[uint64]*commitRecord{rec.ID: rec}})
		d.mu.Unlock()
		if err != nil {
			return fmt.Errorf("overlay: draft %s: commit %d interrupted by a crash: %w", d.name, rec.ID, err)
		}
	}
	return nil
}

// unfinished reports whether a crash interrupted rec's commit, its
// rollback or its undo.
func unfinished(rec *commitRecord) bool {
	switch rec.State {
	case stateStaging, statePlacing, stateRollingBack, stateUndoing:
		return true
	}
	return false
}

// resumeLocked finishes what a crash interrupted of rec, if anything.
// Must be called with d.mu held for writing.
func (d *Draft) resumeLocked(rec *commitRecord) error {
	switch rec.State {
	case stateStaging, statePlacing:
		return d.runLocked(rec, nil)
	case stateRollingBack:
		return d.rollbackLocked(rec, rec.Upto-1, nil)
	case stateUndoing:
		return d.finishUndoLocked(rec, SourceCLI)
	}
	return nil
}

// backup copies what the disk holds at key into the commit's undo
// directory under name: a file with its mode, a symlink, or a whole
// directory tree.
func (d *Draft) backup(id uint64, key, name string) error {
	dst := filepath.Join(d.undoDir(id), "disk", name)
	err := copyTree(d.w.disk, diskName(key), afero.NewOsFs(), dst)
	if err != nil {
		return fmt.Errorf("overlay: commit: keep %q for undo: %w", key, err)
	}
	return nil
}

// copyFile copies a state file.
func copyFile(src, dst string) error {
	return copyTree(afero.NewOsFs(), src, afero.NewOsFs(), dst)
}

// copyTree copies a file, symlink or directory tree between file systems,
// keeping modes, mtimes and, as far as the caller may, owners.
func copyTree(from afero.Fs, src string, to afero.Fs, dst string) error {
	fi, err := lstatDisk(from, strings.TrimPrefix(src, "/"))
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		r, ok := from.(afero.LinkReader)
		l, ok2 := to.(afero.Linker)
		if !ok || !ok2 {
			return fmt.Errorf("symlinks unsupported")
		}
		t, err := r.ReadlinkIfPossible(src)
		if err != nil {
			return err
		}
		if err := l.SymlinkIfPossible(t, dst); err != nil {
			return err
		}
		return keepOwner(to, dst, fi)
	case fi.Mode()&fs.ModeSocket != 0:
		return nil // a socket is nothing without its listener
	case kindOf(fi.Mode()) == kindSpecial:
		// Never opened: a FIFO's open would wait for a writer.
		var rdev uint64
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			rdev = st.Rdev
		}
		if err := mknodOn(to, dst, fi.Mode(), rdev); err != nil {
			return err
		}
		if err := keepOwner(to, dst, fi); err != nil {
			return err
		}
		return to.Chtimes(dst, fi.ModTime(), fi.ModTime())
	case fi.IsDir():
		if err := to.MkdirAll(dst, fi.Mode().Perm()|0o700); err != nil {
			return err
		}
		f, err := from.Open(src)
		if err != nil {
			return err
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := copyTree(from, src+"/"+n, to, dst+"/"+n); err != nil {
				return err
			}
		}
		if err := keepOwner(to, dst, fi); err != nil { // before the chmod, which a chown may clear
			return err
		}
		if err := to.Chmod(dst, fi.Mode()); err != nil {
			return err
		}
		return to.Chtimes(dst, fi.ModTime(), fi.ModTime())
	}
	in, err := from.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := to.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := keepOwner(to, dst, fi); err != nil { // before the chmod, which a chown may clear
		return err
	}
	if err := to.Chmod(dst, fi.Mode()); err != nil {
		return err
	}
	return to.Chtimes(dst, fi.ModTime(), fi.ModTime())
}

// keepOwner gives dst, not following a symlink, the owner of the object
// fi describes. Only root may give away files: for anyone else the copy
// keeps its maker's, who owned what they could back up anyway.
func keepOwner(to afero.Fs, dst string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	var err error
	switch v := to.(type) {
	case beneath.FS: // its Chown does not follow a final symlink
		err = v.Chown(dst, int(st.Uid), int(st.Gid))
	case *afero.OsFs:
		err = os.Lchown(dst, int(st.Uid), int(st.Gid))
	}
	if errors.Is(err, fs.ErrPermission) && os.Geteuid() != 0 {
		return nil
	}
	return err
}
