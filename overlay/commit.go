//go:build linux

package overlay

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

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
	// What the checks and the plan below ask of the disk's directories
	// is asked once; readers may look in again once the ops run.
	d.owners = ownerCache{}
	unlock := func() {
		d.owners = nil
		d.mu.Unlock()
	}
	var parts map[string]*partialFile
	if len(opts.Hunks) > 0 {
		ch, err := d.chooseHunksLocked(opts.Hunks, files)
		if err != nil {
			unlock()
			return nil, err
		}
		opts.Keys, parts = ch.keys, ch.partial
	}
	chosen := d.chooseLocked(opts.Keys, true)
	res := &CommitResult{DryRun: opts.DryRun, Applied: []StatusEntry{}}
	status, err := d.statusOf(chosen)
	if err != nil {
		unlock()
		return nil, err
	}
	res.Applied = status
	noop := d.noopLocked(chosen)
	merged, conflicts, err := d.checkLocked(chosen, noop)
	if err != nil {
		unlock()
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
		unlock()
		return res, nil
	}
	if len(status) == 0 && len(linked) == 0 {
		// Only entries that change nothing (see same): drop them, so
		// the view shows what the user has, and write nothing. A file
		// open for writing stays: what is written next must not go.
		var drop []string
		for _, k := range sortedKeys(chosen) {
			if e := chosen[k]; e.Kind != kindFile || d.writers[e.Ino] == 0 {
				drop = append(drop, k)
			}
		}
		publish, err := d.dropLocked(drop, opts.Source)
		unlock()
		if err != nil {
			return nil, err
		}
		publish()
		return res, nil
	}
	if len(linked) > 0 {
		unlock()
		return res, fmt.Errorf("overlay: commit refused, %d path(s) below a directory that is a symlink on disk now, nothing written: %w", len(linked), ErrConflict)
	}
	if len(privileged) > 0 {
		unlock()
		return res, fmt.Errorf("overlay: commit refused, %d path(s) with set-id bits or another owner, nothing written: %w", len(privileged), ErrConflict)
	}
	if len(res.Conflicts) > 0 && !opts.Force {
		unlock()
		return res, fmt.Errorf("overlay: commit refused, %d conflicting path(s), nothing written: %w", len(res.Conflicts), ErrConflict)
	}
	rec, err := d.prepareLocked(chosen, merged, noop, parts, opts)
	if err != nil {
		unlock()
		return nil, err
	}
	res.ID = rec.ID
	d.owners = nil
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
	d.w.feed.publishPaced(changes)
	return res, nil
}

// statusOf reports chosen entries as Status does. Must be called with
// d.mu held.
func (d *Draft) statusOf(chosen map[string]*entry) ([]StatusEntry, error) {
	return d.statusEntries(d.changesLocked(), func(it item) bool {
		_, ok := chosen[it.key]
		return ok
	}, d.owners)
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
	keepDir := filepath.Join(d.undoDir(id), "data")
	if err := os.MkdirAll(keepDir, 0o700); err != nil {
		return nil, err
	}
	kept, err := unix.Open(keepDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: keepDir, Err: err}
	}
	defer unix.Close(kept)
	if err := os.MkdirAll(filepath.Join(d.undoDir(id), "disk"), 0o700); err != nil {
		return nil, err
	}
	rec.Paths = sortedKeys(chosen)
	if err := d.planLocked(rec, chosen, merged, noop, opts.AllowOwner); err != nil {
		return nil, err
	}
	if err := d.keepPartsLocked(rec, parts); err != nil {
		return nil, err
	}
	linked := d.linkOpsLocked(rec, chosen)
	for _, k := range rec.Paths {
		e := chosen[k]
		if e.Ino == 0 || rec.Inode[e.Ino] != nil {
			continue // none, or kept for another of its names
		}
		n := d.inodes[e.Ino]
		rec.Inode[e.Ino] = n
		if n.Data && !linked[e.Ino] {
			// A link shares the content; a file still open for writing
			// changes on after the commit, so undo gets a copy of it.
			var err error
			if d.writers[e.Ino] > 0 {
				err = copyFile(d.dataPath(n.dataName(e.Ino)), filepath.Join(keepDir, keepName(e.Ino)))
			} else {
				err = d.keepData(e.Ino, n, kept)
			}
			if err != nil {
				return nil, fmt.Errorf("overlay: commit: keep %q for undo: %w", k, err)
			}
		}
	}
	if !slices.ContainsFunc(rec.Ops, func(op commitOp) bool { return op.Kind == opStage }) {
		// No phase A: recorded as placing at once, not rewritten so
		// (10,000 ops encode to megabytes) before the first op.
		rec.State = statePlacing
	}
	if err := d.st.write(&txn{commits: map[uint64]*commitRecord{id: rec}}); err != nil {
		return nil, fmt.Errorf("overlay: commit: record: %w", err)
	}
	return rec, d.st.sync()
}

// testHookOp, when set by a test, runs before each op of a commit; an
// error stops the commit there as a crash would.
var testHookOp func(i int) error

// testHookStamped, when set by a test, runs when a commit is done, before
// its record is stamped.
var testHookStamped func()

// testHookReleased, when set by a test, runs once the draft let go of
// the data files a commit linked into place, before the commit is
// stamped; an error stops the commit there as a crash would.
var testHookReleased func() error

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
	if testHookStamped != nil {
		testHookStamped()
	}
	t.unlinked = d.releaseLinked(rec)
	if testHookReleased != nil {
		if err := testHookReleased(); err != nil {
			return err
		}
	}
	rec.State, rec.Stamped = stateDone, time.Now().UnixNano()
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
