//go:build linux

package overlay

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// UndoKeep is how many of a draft's latest commits keep what undo needs
// (the disk content they overwrote, the draft content they took): older
// commits can no longer be undone. Commits beyond it are expired after
// every commit, so the state holds at most this many commits' undo data
// whatever the number of commits.
const UndoKeep = 20

// stateExpired: a commit whose undo data was dropped (see UndoKeep).
const stateExpired = "expired"

// GCResult says what a collection of a draft's state found and freed (or
// would free, for a dry run).
type GCResult struct {
	DryRun bool `json:"dryRun,omitempty"`
	// Size is what the draft's state takes on disk, before the
	// collection; Undo, Blobs and Data the parts of it held by undo
	// data, kept base contents and the draft's files (after it).
	Size  int64 `json:"size"`
	Undo  int64 `json:"undo"`
	Blobs int64 `json:"blobs"`
	Data  int64 `json:"data"`
	// Freed is what the collection freed.
	Freed int64 `json:"freed"`
	// Expired are the commits whose undo data went; BlobsDropped the kept
	// contents nothing referred to any more.
	Expired      []uint64 `json:"expired"`
	BlobsDropped int      `json:"blobsDropped"`
}

// GC drops what the draft's state no longer needs: the undo data of
// commits older than the last UndoKeep, kept base contents that no draft
// entry or kept commit refers to, and undo directories a crash left. It
// runs by itself after every commit, undo and discard.
func (d *Draft) GC(dryRun bool) (*GCResult, error) {
	d.commitMu.Lock()
	defer d.commitMu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.w.readOnly && !dryRun {
		return nil, fmt.Errorf("overlay: gc of draft %s: %w", d.name, errReadOnly)
	}
	res, err := d.gcLocked(dryRun)
	if err == nil {
		res.Size, res.Undo = dirSize(d.dir), dirSize(filepath.Join(d.dir, "undo"))
		res.Blobs, res.Data = dirSize(filepath.Join(d.dir, "blobs")), dirSize(filepath.Join(d.dir, "data"))
		if !dryRun {
			res.Size += res.Freed // the size before
		}
	}
	return res, err
}

// gcLocked must be called with d.commitMu and d.mu held (for writing).
func (d *Draft) gcLocked(dryRun bool) (*GCResult, error) {
	res := &GCResult{DryRun: dryRun, Expired: []uint64{}}
	heads, err := d.st.commitHeads()
	if err != nil {
		return nil, err
	}
	var done []*commitHead
	for _, h := range heads {
		if h.State == stateDone {
			done = append(done, h)
		}
	}
	t := &txn{reserved: true, commits: map[uint64]*commitRecord{}}
	expired := map[uint64]bool{}
	for i := 0; i < len(done)-UndoKeep; i++ {
		h := done[i]
		r, err := d.st.commit(h.ID)
		if err != nil {
			return nil, err
		}
		expired[h.ID] = true
		res.Expired = append(res.Expired, h.ID)
		t.commits[h.ID] = r.summary(stateExpired)
	}
	// What is referred to: bases of the draft's entries, and of the
	// entries and merged contents of every commit kept.
	used := map[string]bool{}
	for _, e := range d.entries {
		if e.Base != nil && e.Base.Kept {
			used[e.Base.Hash] = true
		}
	}
	keepUndo := map[string]bool{}
	for _, h := range heads {
		if expired[h.ID] || h.State == stateExpired || h.State == stateUndone || h.State == stateFailed {
			continue
		}
		keepUndo[strconv.FormatUint(h.ID, 10)] = true
		for _, b := range h.Blobs {
			used[b] = true
		}
	}
	if !dryRun && len(t.commits) > 0 {
		// The records first: a crash after leaves undo directories no
		// record names, which the next collection removes.
		if err := d.st.write(t); err != nil {
			return nil, fmt.Errorf("overlay: gc of draft %s: %w", d.name, err)
		}
	}
	undos, _ := os.ReadDir(filepath.Join(d.dir, "undo"))
	for _, u := range undos {
		if keepUndo[u.Name()] {
			continue
		}
		p := filepath.Join(d.dir, "undo", u.Name())
		res.Freed += dirSize(p)
		if !dryRun {
			os.RemoveAll(p)
		}
	}
	blobs, _ := os.ReadDir(filepath.Join(d.dir, "blobs"))
	for _, b := range blobs {
		if used[b.Name()] {
			continue
		}
		p := filepath.Join(d.dir, "blobs", b.Name())
		if fi, err := b.Info(); err == nil {
			res.Freed += allocated(fi)
		}
		res.BlobsDropped++
		if !dryRun {
			os.Remove(p)
		}
	}
	return res, nil
}
