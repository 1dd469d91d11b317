//go:build linux

package overlay

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// The timeline records the draft as it was after each step an agent
// took: one `draftfs run`, one ACP prompt turn, one MCP tool call, or a
// burst of writes through the mount ended by a quiet period. A
// checkpoint is the draft's whole state (entries, inodes, and the
// content of every file it holds) kept in the chunk store (chunks.go):
// what did not change since the last checkpoint costs nothing but the
// names of its chunks. [Draft.Rewind] puts the draft back as it was
// after any checkpoint (rewind.go).
//
// Files, under the draft's directory:
//
//	timeline/cp/ID.json   a checkpoint: who, when, what changed, and the
//	                      chunks of its state (cpState as JSON)
//	timeline/chunks.db    the chunk store (timeline/chunks/ holds the
//	                      chunks of earlier versions, a file each)
//	timeline/rewind.json  a rewind under way (see rewind.go)

// TimelineKeep is how many checkpoints a draft keeps; older ones are
// dropped with the chunks only they used.
const TimelineKeep = 1000

// DefaultQuiet is how long the mount must be quiet before its writes
// make a checkpoint.
const DefaultQuiet = 2 * time.Second

// statMax is the largest file whose added and deleted lines a
// checkpoint counts.
const statMax = 16 << 20

// freshMax is the most content a checkpoint keeps in memory from its
// capture to its line counts; the rest is read back from the chunks. A
// variable for tests.
var freshMax = 32 << 20

// Author says who made a step.
type Author struct {
	Source Source `json:"source"`
	// Name is the command (a `draftfs run`'s), the ACP agent or the MCP
	// client that made it, when known.
	Name string `json:"name,omitempty"`
	// Session is an ACP session's id.
	Session string `json:"session,omitempty"`
}

func (a Author) String() string {
	s := string(a.Source)
	if a.Name != "" {
		s += " " + a.Name
	}
	if a.Session != "" {
		s += " (session " + a.Session + ")"
	}
	return s
}

// Checkpoint is one step of the draft's timeline.
type Checkpoint struct {
	ID     uint64    `json:"id"`
	Time   time.Time `json:"time"`
	Author Author    `json:"author"`
	// Label says what the step was ("run: make test", "tools/call
	// write_file", "rewind to 12").
	Label string `json:"label,omitempty"`
	// Files are the paths the step changed; Added and Deleted count the
	// lines of text files it changed (files over 16 MiB uncounted).
	Files   []string `json:"files"`
	Added   int      `json:"added"`
	Deleted int      `json:"deleted"`
	// Rewound: the step put the draft back as it was after checkpoint
	// Rewound.
	Rewound uint64 `json:"rewound,omitempty"`
	// LogEnd is how many entries the draft's log ([Draft.Log]) held
	// when the state was read: the entries from the last checkpoint's
	// LogEnd to this one's are the changes this state holds, whenever
	// their front end finished them.
	LogEnd uint64 `json:"logEnd"`
	// State are the chunks of the draft's state after the step.
	State []string `json:"state"`
	// Dropped are chunks the previous checkpoint used that this one may
	// not: every chunk it stopped using, and others (see dropped).
	// Expiry looks for the chunks to delete among them. Drops says
	// Dropped is recorded: checkpoints written before it was lack it.
	Dropped []string `json:"dropped,omitempty"`
	Drops   bool     `json:"drops,omitempty"`
	// Hash is the state's hash: of its chunks' hashes (see stateHash).
	// Checkpoints written before states were cut at records hold the
	// hash of the state's encoding, which no new state's hash equals.
	Hash string `json:"hash"`
}

// cpState is the draft's state at a checkpoint.
type cpState struct {
	Entries map[string]*entry  `json:"entries"`
	Inodes  map[uint64]*inode  `json:"inodes"`
	Data    map[uint64]*cpData `json:"data,omitempty"`
	// Blobs are the kept base contents the entries name, by hash.
	Blobs   map[string][]string `json:"blobs,omitempty"`
	NextIno uint64              `json:"nextIno"`
	// base is the state a capture read this one over, touched and
	// touchedInos the keys and inodes the draft touched in between
	// (Draft.touched): what can differ from base. nil for a state read
	// whole or from a checkpoint.
	base        *cpState
	touched     map[string]struct{}
	touchedInos map[uint64]struct{}
}

// forgetBase drops what st knows of the state it was read over.
func (st *cpState) forgetBase() { st.base, st.touched, st.touchedInos = nil, nil, nil }

// after reports whether st was read over prev: only the keys and inodes
// st touched can differ between them.
func (st *cpState) after(prev *cpState) bool { return prev != nil && st.base == prev }

// cpData is the content of a data file at a checkpoint.
type cpData struct {
	Hash   string   `json:"h"`
	Chunks []string `json:"c"`
	Size   int64    `json:"s"`
	Mtime  int64    `json:"mt"`
	// Ctime is the data file's when it was read: a write since moves
	// it, even one after which a utimes put the size and mtime back as
	// they were (0 in states recorded before it was kept).
	Ctime int64 `json:"ct,omitempty"`
}

// timeline is a draft's checkpoints.
type timeline struct {
	d      *Draft      // read only
	dir    string      // read only
	chunks *chunkStore // read only; used with mu held
	quiet  time.Duration
	keep   int // how many checkpoints to keep: TimelineKeep

	mu sync.Mutex // serialises checkpoints and rewinds; protects the following
	// prev is the state the last capture read, nil before the first
	// (see capture).
	prev *cpState
	enc  stateEncoder
	// last is the state of the last checkpoint, read lazily, with its
	// hash and its own chunks (Checkpoint.State).
	last       *cpState
	lastHash   string
	lastChunks []string
	lastID     uint64
	// known maps a data file's (size, mtime, ctime) to its content at
	// the last look, so an unchanged file is not read again; seeded:
	// taken from the last checkpoint (see seed).
	known  map[uint64]*cpData
	seeded bool
	// fresh holds the content a capture read, by hash, at most freshMax
	// bytes of it, for the checkpoint's line counts of new files (see
	// changed); freshBytes is its size. Cleared when the checkpoint is
	// recorded.
	fresh      map[string][]byte
	freshBytes int
	// holds counts steps under way (BeginStep): the quiet period makes
	// no checkpoint meanwhile.
	holds int
	// pending: changes since the last checkpoint, by src; by names
	// who within it made them, in order (see Source.By), at most
	// quietNames.
	pending bool
	src     Source
	by      []string
	timer   *time.Timer
	sub     *Subscription
	closed  bool
	// failed is why the last checkpoint of a quiet period failed.
	failed error
}

func openTimeline(d *Draft, quiet time.Duration) (*timeline, error) {
	dir := filepath.Join(d.dir, "timeline")
	tl := &timeline{d: d, dir: dir, chunks: newChunkStore(dir, d.w.readOnly), quiet: quiet, keep: TimelineKeep, known: map[uint64]*cpData{}}
	ids, err := tl.ids()
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 {
		tl.lastID = ids[len(ids)-1]
	}
	return tl, nil
}

// watch makes checkpoints of the changes the feed reports once the
// draft is quiet for tl.quiet.
func (tl *timeline) watch() {
	if tl.quiet <= 0 {
		return
	}
	tl.sub = tl.d.w.feed.subscribe(false)
	go func() {
		for c := range tl.sub.C {
			switch {
			case c.Draft == tl.d.name && c.Kind != ChangeCommit && c.Kind != ChangeUndo:
				tl.note(c.Source, c.By)
			case c.Overflow:
				tl.note("", "") // changes were lost: maybe some of the draft's
			}
		}
	}()
}

// quietNames is how many of those who made the changes of a quiet
// period its checkpoint's author names.
const quietNames = 4

// note records a change by src (who within it: by) and restarts the
// quiet period.
func (tl *timeline) note(src Source, by string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.closed {
		return
	}
	tl.pending = true
	if src != "" {
		tl.src = src
	}
	if by != "" && len(tl.by) < quietNames && !slices.Contains(tl.by, by) {
		tl.by = append(tl.by, by)
	}
	if tl.timer == nil {
		tl.timer = time.AfterFunc(tl.quiet, tl.quietEnded)
	} else {
		tl.timer.Reset(tl.quiet)
	}
}

func (tl *timeline) quietEnded() {
	// The ctimes kept in memory only, whatever the timeline does: a
	// failure is the next record's to tell, which carries them.
	tl.d.flushCtimes()
	tl.mu.Lock()
	if tl.closed || tl.holds > 0 || !tl.pending {
		tl.mu.Unlock()
		return
	}
	src := tl.src
	if src == "" {
		src = SourceMount
	}
	// No one waits for this checkpoint: a failure is told by the
	// timeline's next reader (Draft.Timeline).
	_, tl.failed = tl.checkpointLocked(Author{Source: src, Name: strings.Join(tl.by, ", ")}, "", 0)
	tl.mu.Unlock()
	// Still quiet: data files for the next burst of creates.
	tl.d.spare.makeAhead(tl.d.data)
}

func (tl *timeline) close() {
	tl.mu.Lock()
	tl.closed = true
	if tl.timer != nil {
		tl.timer.Stop()
	}
	tl.chunks.close()
	tl.mu.Unlock()
	if tl.sub != nil {
		tl.sub.Close()
	}
}

// BeginStep starts a step of the timeline by a: changes until end is
// called make one checkpoint, labelled label, which end returns (nil
// when the step changed nothing).
func (d *Draft) BeginStep(a Author, label string) (end func() (*Checkpoint, error)) {
	tl := d.tl
	tl.mu.Lock()
	tl.holds++
	tl.mu.Unlock()
	var once sync.Once
	return func() (cp *Checkpoint, err error) {
		once.Do(func() {
			// The feed delivers the step's last changes asynchronously:
			// let it catch up so they are not taken for the next step's.
			tl.d.w.feed.settle(time.Second)
			tl.mu.Lock()
			defer tl.mu.Unlock()
			tl.holds--
			cp, err = tl.checkpointLocked(a, label, 0)
		})
		return cp, err
	}
}

// Checkpoint records the draft as it is now as a step by a, unless it
// is as the last checkpoint left it (nil).
func (d *Draft) Checkpoint(a Author, label string) (*Checkpoint, error) {
	d.tl.mu.Lock()
	defer d.tl.mu.Unlock()
	return d.tl.checkpointLocked(a, label, 0)
}

// checkpointLocked records the draft's state; rewound, when not 0, says
// the state is checkpoint rewound's, recorded even when it is the last
// one's. Must be called with tl.mu held.
func (tl *timeline) checkpointLocked(a Author, label string, rewound uint64) (*Checkpoint, error) {
	if tl.d.w.readOnly {
		return nil, nil
	}
	if tl.timer != nil {
		tl.timer.Stop()
	}
	if src, by := a.Source.split(); by != "" {
		a.Source = src
		if a.Name == "" {
			a.Name = by
		}
	}
	tl.pending, tl.by = false, nil
	var cp *Checkpoint
	var st *cpState
	err := tl.chunks.batch(func() (err error) {
		cp, st, err = tl.record(a, label, rewound)
		return err
	})
	if err != nil {
		// They may name chunks the batch did not keep.
		clear(tl.known)
		tl.enc.forget()
		return nil, err
	}
	if cp == nil {
		return nil, nil
	}
	cb, err := json.Marshal(cp)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(tl.dir, "cp"), 0o700); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(tl.cpPath(cp.ID), cb, 0o600); err != nil {
		return nil, fmt.Errorf("overlay: draft %s: checkpoint: %w%s", tl.d.name, err, fullHint(tl.dir, err))
	}
	tl.last, tl.lastHash, tl.lastChunks, tl.lastID = st, cp.Hash, cp.State, cp.ID
	if cp.ID%50 == 0 {
		tl.expireLocked()
	}
	return cp, nil
}

// record reads the draft's state and keeps its chunks: the checkpoint
// to write and its state, nil when nothing changed since the last one
// (see checkpointLocked). Must be called within a batch of tl.chunks.
func (tl *timeline) record(a Author, label string, rewound uint64) (*Checkpoint, *cpState, error) {
	defer func() { tl.fresh, tl.freshBytes = nil, 0 }()
	st, logEnd, err := tl.capture()
	if err != nil {
		return nil, nil, err
	}
	defer st.forgetBase() // states would otherwise keep every one before
	b, hashes, err := tl.enc.encode(st, tl.chunks.putChunk)
	if err != nil {
		return nil, nil, err
	}
	if verifyCaptures {
		if whole, err := json.Marshal(st); err != nil || string(whole) != string(b) {
			return nil, nil, fmt.Errorf("overlay: timeline: a state encodes other than json.Marshal does (%v)", err)
		}
	}
	hash := stateHash(hashes)
	prev, err := tl.lastState()
	if err != nil {
		return nil, nil, err
	}
	if hash == tl.lastHash && rewound == 0 || tl.lastID == 0 && len(st.Entries) == 0 {
		return nil, nil, nil // nothing changed since the last checkpoint, or ever
	}
	cp := &Checkpoint{ID: tl.lastID + 1, Time: time.Now().UTC(), Author: a, Label: label, Rewound: rewound, LogEnd: logEnd, Hash: hash, State: hashes}
	cp.Dropped, cp.Drops = dropped(prev, tl.lastChunks, st), true
	cp.Files, cp.Added, cp.Deleted = tl.changed(prev, st)
	if verifyCaptures && st.after(prev) {
		if err := verifyTouched(prev, tl.lastChunks, st, cp); err != nil {
			return nil, nil, err
		}
	}
	return cp, st, nil
}

// Timeline returns the draft's checkpoints, newest first.
func (d *Draft) Timeline() ([]Checkpoint, error) {
	d.tl.mu.Lock()
	failed := d.tl.failed
	d.tl.mu.Unlock()
	if failed != nil {
		return nil, fmt.Errorf("overlay: draft %s: the last checkpoint failed: %w", d.name, failed)
	}
	ids, err := d.tl.ids()
	if err != nil {
		return nil, err
	}
	out := make([]Checkpoint, 0, len(ids))
	for i := len(ids) - 1; i >= 0; i-- {
		cp, err := d.tl.read(ids[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *cp)
	}
	return out, nil
}

// expireLocked drops the checkpoints beyond tl.keep and the chunks
// no kept one uses. Must be called with tl.mu held.
//
// A chunk no kept checkpoint uses was last used by a dropped one: the
// checkpoint after that, the oldest kept or a dropped one, has it in its
// Dropped. So the chunks to delete are among those the checkpoints
// dropped now and the oldest kept list, less those a later checkpoint
// lists (it was used again since, and maybe still is by kept ones) and
// the last state's. (tl.known names none other: expiry follows a
// checkpoint, whose capture took its records.) This reads the small
// checkpoint files only; while a kept checkpoint lacks Dropped (written
// before checkpoints recorded it) it reads every kept state instead.
func (tl *timeline) expireLocked() {
	ids, err := tl.ids()
	if err != nil || len(ids) <= tl.keep {
		return
	}
	cps := make([]*Checkpoint, len(ids))
	for i, id := range ids {
		if cps[i], err = tl.read(id); err != nil {
			return // keep every chunk rather than guess
		}
	}
	cut := len(ids) - tl.keep // cps[cut] is the oldest kept
	if slices.ContainsFunc(cps, func(cp *Checkpoint) bool { return !cp.Drops }) {
		tl.expireByStates(ids[:cut], cps[cut:])
		return
	}
	unused := map[string]bool{}
	for _, cp := range cps[:cut+1] {
		for _, h := range cp.Dropped {
			unused[h] = true
		}
	}
	for _, cp := range cps[cut+1:] {
		for _, h := range cp.Dropped {
			delete(unused, h)
		}
	}
	last, err := tl.lastState()
	if err != nil || last == nil {
		return
	}
	for _, h := range tl.lastChunks {
		delete(unused, h)
	}
	forEachChunk(last, func(h string) { delete(unused, h) })
	for _, id := range ids[:cut] {
		os.Remove(tl.cpPath(id))
	}
	tl.chunks.remove(unused)
}

// expireByStates is expireLocked reading the states of the checkpoints
// kept: the chunks none of them uses go with the checkpoints gone.
func (tl *timeline) expireByStates(gone []uint64, kept []*Checkpoint) {
	used := map[string]bool{}
	for _, cp := range kept {
		st, err := tl.state(cp)
		if err != nil {
			return // keep every chunk rather than guess
		}
		for _, h := range cp.State {
			used[h] = true
		}
		forEachChunk(st, func(h string) { used[h] = true })
	}
	for _, cd := range tl.known {
		for _, h := range cd.Chunks {
			used[h] = true
		}
	}
	for _, id := range gone {
		os.Remove(tl.cpPath(id))
	}
	tl.chunks.keepOnly(used)
}

// verifyTouched checks that what cp lists as changed and dropped
// between prev (whose own chunks were prevChunks) and st, read from the
// keys and inodes st touched, is what comparing the whole states finds.
func verifyTouched(prev *cpState, prevChunks []string, st *cpState, cp *Checkpoint) error {
	files := changedKeys(prev, st)
	slices.Sort(files)
	whole := *st
	whole.forgetBase() // dropped then compares every record
	all := dropped(prev, prevChunks, &whole)
	slices.Sort(all)
	got := slices.Clone(cp.Dropped)
	slices.Sort(got)
	if !slices.Equal(files, cp.Files) || !slices.Equal(slices.Compact(all), slices.Compact(got)) {
		return fmt.Errorf("%w: checkpoint %d lists changes %q and drops %d chunks, the states differ in %q and %d", errCaptureMissed, cp.ID, cp.Files, len(got), files, len(all))
	}
	return nil
}

// forEachChunk calls fn with each chunk of st's data files and kept
// bases (not those of st itself: Checkpoint.State).
func forEachChunk(st *cpState, fn func(h string)) {
	for _, cd := range st.Data {
		for _, h := range cd.Chunks {
			fn(h)
		}
	}
	for _, cs := range st.Blobs {
		for _, h := range cs {
			fn(h)
		}
	}
}

// dropped is what Checkpoint.Dropped lists for a state st recorded after
// prev, whose own chunks were prevChunks: those, and the chunks of each
// data file and kept base of prev that st does not share. A chunk prev
// used and st does not is one of them: a record st took from prev
// unchanged (the same record: they are never changed in place) has the
// same chunks, and a kept base st has too (by its content's hash) the
// same ones.
func dropped(prev *cpState, prevChunks []string, st *cpState) []string {
	out := slices.Clone(prevChunks)
	if prev == nil {
		return out
	}
	if st.after(prev) {
		for ino := range st.touchedInos {
			if cd := prev.Data[ino]; cd != nil && st.Data[ino] != cd {
				out = append(out, cd.Chunks...)
			}
		}
	} else {
		for ino, cd := range prev.Data {
			if st.Data[ino] != cd {
				out = append(out, cd.Chunks...)
			}
		}
	}
	for h, cs := range prev.Blobs {
		if st.Blobs[h] == nil {
			out = append(out, cs...)
		}
	}
	return out
}
