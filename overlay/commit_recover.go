//go:build linux

package overlay

import (
	"fmt"
)

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
