//go:build linux

package overlay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

func (tl *timeline) cpPath(id uint64) string {
	return filepath.Join(tl.dir, "cp", strconv.FormatUint(id, 10)+".json")
}

// capture reads the draft's state: its metadata under d.mu, with the
// length of the log then, then the content of the data files that
// changed since the last look.
func (tl *timeline) capture() (_ *cpState, logEnd uint64, _ error) {
	st, logEnd, err := tl.captureMeta()
	if err != nil {
		return nil, 0, err
	}
	return st, logEnd, tl.captureData(st)
}

func (tl *timeline) captureMeta() (*cpState, uint64, error) {
	d := tl.d
	d.mu.RLock()
	eb, err := json.Marshal(d.entries)
	var ib []byte
	if err == nil {
		ib, err = json.Marshal(d.inodes)
	}
	var logEnd uint64
	if err == nil {
		logEnd, err = d.st.logLen()
	}
	next := d.nextIno
	d.captures.Add(1)
	d.mu.RUnlock()
	if err != nil {
		return nil, 0, err
	}
	st := &cpState{NextIno: next, Data: map[uint64]*cpData{}, Blobs: map[string][]string{}}
	if err := json.Unmarshal(eb, &st.Entries); err != nil {
		return nil, 0, err
	}
	if err := json.Unmarshal(ib, &st.Inodes); err != nil {
		return nil, 0, err
	}
	return st, logEnd, nil
}

// captureData reads the content of st's data files and kept bases into
// the chunk store.
func (tl *timeline) captureData(st *cpState) error {
	d := tl.d
	for ino, n := range st.Inodes {
		if !n.Data {
			continue
		}
		cd, err := tl.content(ino, n.dataName(ino))
		if errors.Is(err, fs.ErrNotExist) {
			continue // dropped since the metadata was read
		}
		if err != nil {
			return err
		}
		st.Data[ino] = cd
	}
	for _, e := range st.Entries {
		if e.Base == nil || !e.Base.Kept || st.Blobs[e.Base.Hash] != nil {
			continue
		}
		if prev := tl.last; prev != nil && prev.Blobs[e.Base.Hash] != nil {
			st.Blobs[e.Base.Hash] = prev.Blobs[e.Base.Hash]
			continue
		}
		b, err := os.ReadFile(d.blobPath(e.Base.Hash))
		if err != nil {
			return fmt.Errorf("overlay: checkpoint: base %s: %w", e.Base.Hash, err)
		}
		if st.Blobs[e.Base.Hash], err = tl.chunks.put(b); err != nil {
			return err
		}
	}
	return nil
}

// content returns the content of ino's data file name in the chunk
// store.
func (tl *timeline) content(ino uint64, name string) (*cpData, error) {
	p := tl.d.dataPath(name)
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if k, ok := tl.known[ino]; ok && k.Size == fi.Size() && k.Mtime == fi.ModTime().UnixNano() {
		return &k, nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	// Read without the draft's lock: the file may have gone meanwhile
	// and, emptied, become a new inode's (see spares). Then what was
	// read is not ino's, and ino counts as gone.
	if now, err := os.Stat(p); err != nil || !os.SameFile(fi, now) || !tl.d.holds(ino, name) {
		return nil, &fs.PathError{Op: "read", Path: p, Err: fs.ErrNotExist}
	}
	cd := cpData{Hash: hashBytes(b), Size: int64(len(b)), Mtime: fi.ModTime().UnixNano()}
	if cd.Chunks, err = tl.chunks.put(b); err != nil {
		return nil, err
	}
	tl.known[ino] = cd
	return &cd, nil
}

// lastState is the last checkpoint's state, nil when there is none.
func (tl *timeline) lastState() (*cpState, error) {
	if tl.last != nil || tl.lastID == 0 {
		return tl.last, nil
	}
	cp, err := tl.read(tl.lastID)
	if err != nil {
		return nil, err
	}
	st, err := tl.state(cp)
	if err != nil {
		return nil, err
	}
	tl.last, tl.lastHash = st, cp.Hash
	return st, nil
}

// read reads checkpoint id.
func (tl *timeline) read(id uint64) (*Checkpoint, error) {
	b, err := os.ReadFile(tl.cpPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("overlay: draft %s has no checkpoint %d (draftfs log lists them): %w", tl.d.name, id, ErrNoCheckpoint)
	}
	if err != nil {
		return nil, err
	}
	var cp Checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("overlay: checkpoint %d: %w: %w", id, ErrCorrupt, err)
	}
	return &cp, nil
}

// state reads a checkpoint's state.
func (tl *timeline) state(cp *Checkpoint) (*cpState, error) {
	b, err := tl.chunks.get(cp.State, -1)
	if err != nil {
		return nil, err
	}
	var st cpState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("overlay: checkpoint %d: %w: %w", cp.ID, ErrCorrupt, err)
	}
	return &st, nil
}

// ids lists the checkpoints kept, oldest first.
func (tl *timeline) ids() ([]uint64, error) {
	ents, err := os.ReadDir(filepath.Join(tl.dir, "cp"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []uint64
	for _, e := range ents {
		if id, err := strconv.ParseUint(strings.TrimSuffix(e.Name(), ".json"), 10, 64); err == nil && strings.HasSuffix(e.Name(), ".json") {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}
