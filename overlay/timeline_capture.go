//go:build linux

package overlay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

func (tl *timeline) cpPath(id uint64) string {
	return filepath.Join(tl.dir, "cp", strconv.FormatUint(id, 10)+".json")
}

// capture reads the draft's state: its metadata under d.mu, with the
// length of the log then, then the content of the data files that
// changed since the last look. After the first, a capture reads again
// only what the draft touched since the one before (Draft.touched), and
// shares the rest with it.
func (tl *timeline) capture() (_ *cpState, logEnd uint64, _ error) {
	if !tl.seeded {
		tl.seed()
	}
	prev := tl.prev
	tl.prev = nil // until this capture is whole
	st, logEnd, inos, err := tl.captureMeta(prev)
	if err != nil {
		return nil, 0, err
	}
	if err := tl.captureData(st, prev, inos); err != nil {
		return nil, 0, err
	}
	// Gone from the draft: not looked at again. A file goes with its
	// inode touched.
	gone := func(ino uint64) {
		if st.Data[ino] == nil {
			delete(tl.known, ino)
		}
	}
	if inos == nil {
		for ino := range tl.known {
			gone(ino)
		}
	} else {
		for ino := range inos {
			gone(ino)
		}
	}
	tl.prev = st
	return st, logEnd, nil
}

// seed takes what the last checkpoint found in each data file for
// tl.known, once after the timeline opens: a daemon started again then
// reads only the files changed since, not every file of a large draft.
// Not after a rewind, which put other content under sizes and times the
// last checkpoint may have seen.
func (tl *timeline) seed() {
	tl.seeded = true
	last, err := tl.lastState()
	if err != nil || last == nil {
		return // the checkpoint that needs it says what is wrong
	}
	for ino, cd := range last.Data {
		if tl.known[ino] == nil {
			tl.known[ino] = cd
		}
	}
}

// verifyCaptures, set by tests, checks each incremental capture against
// what a whole one reads: a change of the draft that does not touch
// what it changes fails the capture.
var verifyCaptures bool

var errCaptureMissed = errors.New("overlay: timeline: a capture missed a change (Draft.touched)")

// captureMeta reads the draft's entries and inodes: all of them when
// prev is nil, else those touched since prev, over prev's. It returns
// the inodes whose data files to read again (nil: all).
func (tl *timeline) captureMeta(prev *cpState) (*cpState, uint64, map[uint64]struct{}, error) {
	d := tl.d
	d.mu.RLock()
	entries, inodes := d.entries, d.inodes
	var gone []string
	var goneInos []uint64
	touched, touchedInos := d.touched, d.touchedInos
	if prev != nil {
		entries, inodes = map[string]*entry{}, map[uint64]*inode{}
		for k := range touched {
			if e, ok := d.entries[k]; ok {
				entries[k] = e
			} else {
				gone = append(gone, k)
			}
		}
		for ino := range touchedInos {
			if n, ok := d.inodes[ino]; ok {
				inodes[ino] = n
			} else {
				goneInos = append(goneInos, ino)
			}
		}
	}
	// Copies: the draft's own change once d.mu is let go.
	eb, err := json.Marshal(entries)
	var ib []byte
	if err == nil {
		ib, err = json.Marshal(inodes)
	}
	var whole []byte
	if verifyCaptures && prev != nil && err == nil {
		whole, err = json.Marshal([]any{d.entries, d.inodes})
	}
	var logEnd uint64
	if err == nil {
		logEnd, err = d.st.logLen()
	}
	next := d.nextIno
	// Only captures write the sets with d.mu held for reading, one at a
	// time (tl.mu); the inodes open for writing are read again next time.
	d.touched, d.touchedInos = map[string]struct{}{}, map[uint64]struct{}{}
	for ino := range d.writers {
		d.touchedInos[ino] = struct{}{}
	}
	d.captures.Add(1)
	d.mu.RUnlock()
	if err != nil {
		return nil, 0, nil, err
	}
	st := &cpState{NextIno: next, Data: map[uint64]*cpData{}, Blobs: map[string][]string{}}
	if err := json.Unmarshal(eb, &st.Entries); err != nil {
		return nil, 0, nil, err
	}
	if err := json.Unmarshal(ib, &st.Inodes); err != nil {
		return nil, 0, nil, err
	}
	if prev == nil {
		return st, logEnd, nil, nil
	}
	st.base, st.touched, st.touchedInos = prev, touched, touchedInos
	changedEntries, changedInodes := st.Entries, st.Inodes
	st.Entries, st.Inodes = maps.Clone(prev.Entries), maps.Clone(prev.Inodes)
	if st.Entries == nil {
		st.Entries = map[string]*entry{}
	}
	if st.Inodes == nil {
		st.Inodes = map[uint64]*inode{}
	}
	maps.Copy(st.Entries, changedEntries)
	maps.Copy(st.Inodes, changedInodes)
	for _, k := range gone {
		delete(st.Entries, k)
	}
	for _, ino := range goneInos {
		delete(st.Inodes, ino)
	}
	if whole != nil {
		if b, err := json.Marshal([]any{st.Entries, st.Inodes}); err != nil || string(b) != string(whole) {
			return nil, 0, nil, fmt.Errorf("%w: entries or inodes", errCaptureMissed)
		}
	}
	return st, logEnd, touchedInos, nil
}

// captureData reads the content of st's data files and kept bases into
// the chunk store: of those in inos only, taking the others' from prev,
// unless inos is nil.
func (tl *timeline) captureData(st, prev *cpState, inos map[uint64]struct{}) error {
	d := tl.d
	read := st.Inodes
	if inos != nil {
		// The data records of the inodes not touched are prev's: a data
		// file changes only with its inode touched (see Draft.touched),
		// and one that went between a capture's metadata and its read
		// went with its inode touched.
		st.Data = maps.Clone(prev.Data)
		if st.Data == nil {
			st.Data = map[uint64]*cpData{}
		}
		read = map[uint64]*inode{}
		for ino := range inos {
			delete(st.Data, ino)
			if n := st.Inodes[ino]; n != nil {
				read[ino] = n
			}
		}
		if verifyCaptures {
			if err := tl.verifyUntouched(st, inos); err != nil {
				return err
			}
		}
	}
	for ino, n := range read {
		if !n.Data {
			continue
		}
		cd, b, err := tl.content(ino, n.dataName(ino))
		if errors.Is(err, fs.ErrNotExist) {
			continue // dropped since the metadata was read
		}
		if err != nil {
			return err
		}
		st.Data[ino] = cd
		if b != nil && len(b) <= statMax && tl.freshBytes+len(b) <= freshMax {
			if tl.fresh == nil {
				tl.fresh = map[string][]byte{}
			}
			tl.fresh[cd.Hash] = b
			tl.freshBytes += len(b)
		}
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

// verifyUntouched checks that each file of st that the draft did not
// touch since the last capture (inos are those it did) has the data
// record that capture read, as its data file has it.
func (tl *timeline) verifyUntouched(st *cpState, inos map[uint64]struct{}) error {
	for ino, n := range st.Inodes {
		if _, touched := inos[ino]; touched || !n.Data {
			continue
		}
		cd := st.Data[ino]
		if cd == nil {
			return fmt.Errorf("%w: no data record for inode %d", errCaptureMissed, ino)
		}
		if err := tl.verifyData(ino, n.dataName(ino), cd); err != nil {
			return err
		}
	}
	return nil
}

// verifyData checks that the data file name of ino, which the draft did
// not touch since the last capture, is as that capture read it (cd),
// unless touched since this capture read the metadata.
func (tl *timeline) verifyData(ino uint64, name string, cd *cpData) error {
	d := tl.d
	d.mu.RLock()
	defer d.mu.RUnlock()
	var st unix.Stat_t
	if err := d.statData(name, &st); err != nil {
		return nil // gone since: that touched it
	}
	if _, touched := d.touchedInos[ino]; !touched && (st.Size != cd.Size || st.Mtim.Nano() != cd.Mtime) {
		return fmt.Errorf("%w: data of inode %d", errCaptureMissed, ino)
	}
	return nil
}

// content returns the content of ino's data file name in the chunk
// store, and the bytes it read (nil when the file is as tl.known has
// it, unread).
func (tl *timeline) content(ino uint64, name string) (*cpData, []byte, error) {
	d := tl.d
	// A descriptor, not an os.File: that costs an fcntl and a cleanup
	// for each of the thousands of files a checkpoint may read.
	fd, err := d.openDataFd(name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, nil, &fs.PathError{Op: "fstat", Path: d.dataPath(name), Err: err}
	}
	mtime, ctime := st.Mtim.Nano(), st.Ctim.Nano()
	if k := tl.known[ino]; k != nil && k.Size == st.Size && k.Mtime == mtime && k.Ctime == ctime {
		return k, nil, nil
	}
	b, err := readAll(fd, st.Size)
	if err != nil {
		return nil, nil, &fs.PathError{Op: "read", Path: d.dataPath(name), Err: err}
	}
	if testHookContentRead != nil {
		testHookContentRead(ino)
	}
	// Read without the draft's lock: the file may have gone meanwhile
	// and, emptied, become a new inode's (see spares). Then what was
	// read is not ino's, and ino counts as gone.
	var now unix.Stat_t
	if d.statData(name, &now) != nil || now.Ino != st.Ino || !d.holds(ino, name) {
		return nil, nil, &fs.PathError{Op: "read", Path: d.dataPath(name), Err: fs.ErrNotExist}
	}
	cd := &cpData{Size: int64(len(b)), Mtime: mtime, Ctime: ctime}
	if cd.Chunks, err = tl.chunks.put(b); err != nil {
		return nil, nil, err
	}
	if len(cd.Chunks) == 1 {
		cd.Hash = cd.Chunks[0] // the content's hash: one string for both
	} else {
		cd.Hash = hashBytes(b)
	}
	tl.known[ino] = cd // shared with the states, which change none
	return cd, b, nil
}

// readAll reads fd from where it is to its end, in one read(2) and a
// second that finds the end when the file still has the size it was
// found with.
func readAll(fd int, size int64) ([]byte, error) {
	b := make([]byte, 0, size+1)
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, len(b)) // it grew meanwhile
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		switch {
		case err == unix.EINTR:
		case err != nil:
			return nil, err
		case n == 0:
			return b, nil
		default:
			b = b[:len(b)+n]
		}
	}
}

// testHookContentRead, when set by a test, runs when content has read
// the data file of ino, before it checks that ino still has that file.
var testHookContentRead func(ino uint64)

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
	tl.last, tl.lastHash, tl.lastChunks = st, cp.Hash, cp.State
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
