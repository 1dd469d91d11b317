//go:build linux

package overlay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/draftfs/draftfs/overlay/internal/textmerge"
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
//	timeline/chunks/      the chunk store
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
	// Hash is the state's hash.
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
}

// cpData is the content of a data file at a checkpoint.
type cpData struct {
	Hash   string   `json:"h"`
	Chunks []string `json:"c"`
	Size   int64    `json:"s"`
	Mtime  int64    `json:"mt"`
}

// timeline is a draft's checkpoints.
type timeline struct {
	d      *Draft     // read only
	dir    string     // read only
	chunks chunkStore // read only
	quiet  time.Duration

	mu sync.Mutex // serialises checkpoints and rewinds; protects the following
	// last is the state of the last checkpoint, read lazily.
	last     *cpState
	lastHash string
	lastID   uint64
	// known maps a data file's (size, mtime) to its content at the last
	// look, so an unchanged file is not read again.
	known map[uint64]cpData
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
	tl := &timeline{d: d, dir: dir, chunks: chunkStore{filepath.Join(dir, "chunks")}, quiet: quiet, known: map[uint64]cpData{}}
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
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.closed || tl.holds > 0 || !tl.pending {
		return
	}
	src := tl.src
	if src == "" {
		src = SourceMount
	}
	// No one waits for this checkpoint: a failure is told by the
	// timeline's next reader (Draft.Timeline).
	_, tl.failed = tl.checkpointLocked(Author{Source: src, Name: strings.Join(tl.by, ", ")}, "", 0)
}

func (tl *timeline) close() {
	tl.mu.Lock()
	tl.closed = true
	if tl.timer != nil {
		tl.timer.Stop()
	}
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
	st, logEnd, err := tl.capture()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	hash := hashBytes(b)
	prev, err := tl.lastState()
	if err != nil {
		return nil, err
	}
	if hash == tl.lastHash && rewound == 0 || tl.lastID == 0 && len(st.Entries) == 0 {
		return nil, nil // nothing changed since the last checkpoint, or ever
	}
	cp := &Checkpoint{ID: tl.lastID + 1, Time: time.Now().UTC(), Author: a, Label: label, Rewound: rewound, LogEnd: logEnd, Hash: hash}
	if cp.State, err = tl.chunks.put(b); err != nil {
		return nil, err
	}
	cp.Files, cp.Added, cp.Deleted = tl.changed(prev, st)
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
	tl.last, tl.lastHash, tl.lastID = st, hash, cp.ID
	if cp.ID%50 == 0 {
		tl.expireLocked()
	}
	return cp, nil
}

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
		cd, err := tl.content(ino)
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

// content returns a data file's content in the chunk store.
func (tl *timeline) content(ino uint64) (*cpData, error) {
	p := tl.d.dataPath(ino)
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
	b, err := tl.chunks.get(cp.State)
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

// changed lists the paths whose entry or content differs between two
// states, and counts the lines added and deleted in text files.
func (tl *timeline) changed(a, b *cpState) (files []string, added, deleted int) {
	if a == nil {
		a = &cpState{}
	}
	keys := map[string]bool{}
	for k := range a.Entries {
		keys[k] = true
	}
	for k := range b.Entries {
		keys[k] = true
	}
	files = []string{}
	for _, k := range sortedKeys(keys) {
		ea, eb := a.Entries[k], b.Entries[k]
		ca, cb := a.contentOf(ea), b.contentOf(eb)
		if sameEntry(ea, eb) && ca == cb && sameInode(a, b, ea, eb) {
			continue
		}
		files = append(files, k)
		// A path without an entry shows what is below the draft: the
		// base the other side's entry started from.
		old := textChunks(a, ea)
		if ea == nil {
			old = baseChunks(b, eb)
		}
		cur := textChunks(b, eb)
		if eb == nil {
			cur = baseChunks(a, ea)
		}
		if old != nil || cur != nil {
			ad, de := tl.statChunks(old, cur)
			added, deleted = added+ad, deleted+de
		}
	}
	return files, added, deleted
}

// contentOf is the hash of an entry's data content, "" when none.
func (st *cpState) contentOf(e *entry) string {
	if e == nil || e.Ino == 0 || st.Data[e.Ino] == nil {
		return ""
	}
	return st.Data[e.Ino].Hash
}

func sameEntry(a, b *entry) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func sameInode(a, b *cpState, ea, eb *entry) bool {
	var na, nb *inode
	if ea != nil {
		na = a.Inodes[ea.Ino]
	}
	if eb != nil {
		nb = b.Inodes[eb.Ino]
	}
	ja, _ := json.Marshal(na)
	jb, _ := json.Marshal(nb)
	return string(ja) == string(jb)
}

// textChunks are the chunks of what a path held at a state, for
// counting lines: the draft's content, else the base it started from;
// nil for what is not a file of countable size.
func textChunks(st *cpState, e *entry) []string {
	if e == nil || e.Kind != kindFile {
		return nil
	}
	if cd := st.Data[e.Ino]; e.Ino != 0 && cd != nil {
		if cd.Size > statMax {
			return nil
		}
		return cd.Chunks
	}
	return baseChunks(st, e)
}

// baseChunks are the chunks of the content an entry's base kept.
func baseChunks(st *cpState, e *entry) []string {
	if e != nil && e.Base != nil && e.Base.Kept && e.Base.Size <= statMax {
		return st.Blobs[e.Base.Hash]
	}
	return nil
}

// statChunks counts the lines added and deleted from the content of
// chunks a to that of chunks b. Only the chunks between their common
// first and last ones are read: content-defined chunks of two versions
// of a file differ only around the changes, and the lines cut at the
// edges are the same on both sides, so the counts are exact.
func (tl *timeline) statChunks(a, b []string) (added, deleted int) {
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	old, err1 := tl.chunks.get(a)
	cur, err2 := tl.chunks.get(b)
	if err1 != nil || err2 != nil {
		return 0, 0
	}
	added, deleted, _ = textmerge.Stat(old, cur)
	return added, deleted
}

// baseText is the content an entry's base kept.
func (tl *timeline) baseText(st *cpState, e *entry) ([]byte, error) {
	if cs := baseChunks(st, e); cs != nil {
		return tl.chunks.get(cs)
	}
	return nil, nil
}

// expireLocked drops the checkpoints beyond TimelineKeep and the chunks
// no kept one uses. Must be called with tl.mu held.
func (tl *timeline) expireLocked() {
	ids, err := tl.ids()
	if err != nil || len(ids) <= TimelineKeep {
		return
	}
	for _, id := range ids[:len(ids)-TimelineKeep] {
		os.Remove(tl.cpPath(id))
	}
	used := map[string]bool{}
	for _, id := range ids[len(ids)-TimelineKeep:] {
		cp, err := tl.read(id)
		if err != nil {
			return // keep every chunk rather than guess
		}
		st, err := tl.state(cp)
		if err != nil {
			return
		}
		for _, h := range cp.State {
			used[h] = true
		}
		for _, cd := range st.Data {
			for _, h := range cd.Chunks {
				used[h] = true
			}
		}
		for _, cs := range st.Blobs {
			for _, h := range cs {
				used[h] = true
			}
		}
	}
	for _, cd := range tl.known {
		for _, h := range cd.Chunks {
			used[h] = true
		}
	}
	dirs, _ := os.ReadDir(tl.chunks.dir)
	for _, sub := range dirs {
		ents, _ := os.ReadDir(filepath.Join(tl.chunks.dir, sub.Name()))
		for _, e := range ents {
			if !used[e.Name()] {
				os.Remove(filepath.Join(tl.chunks.dir, sub.Name(), e.Name()))
			}
		}
	}
}

// DiffCheckpoints returns what changed from checkpoint a to checkpoint
// b (a 0: from what is below the draft, the bases its entries started
// from) as git-style diffs, one per path, below keys (none: all).
func (d *Draft) DiffCheckpoints(a, b uint64, keys ...string) ([]FileDiff, error) {
	tl := d.tl
	tl.mu.Lock()
	defer tl.mu.Unlock()
	sa, sb := &cpState{}, (*cpState)(nil)
	for _, x := range []struct {
		id uint64
		st **cpState
	}{{a, &sa}, {b, &sb}} {
		if x.id == 0 {
			continue
		}
		cp, err := tl.read(x.id)
		if err != nil {
			return nil, err
		}
		if *x.st, err = tl.state(cp); err != nil {
			return nil, err
		}
	}
	if sb == nil {
		return nil, fmt.Errorf("overlay: diff of checkpoints: give the later one: %w", ErrNoCheckpoint)
	}
	files, _, _ := tl.changed(sa, sb)
	out := []FileDiff{}
	for _, k := range files {
		if len(keys) > 0 && !slicesContainsWithin(keys, k) {
			continue
		}
		ea, eb := sa.Entries[k], sb.Entries[k]
		if eb != nil && eb.Kind == kindDir && eb.Origin != "" && (ea == nil || ea.Origin != eb.Origin) {
			out = append(out, dirRename(eb.Origin, k))
			continue
		}
		if back := movedBack(sa, sb, k); back != "" {
			// Renamed back to where it came from (a rewind, a second
			// rename): the origin shows the directory again.
			out = append(out, dirRename(k, back))
			continue
		}
		old, oldExists := tl.sideOf(sa, ea, sb, eb)
		cur, newExists := tl.sideOf(sb, eb, sa, ea)
		if !oldExists && !newExists {
			continue // a directory, or what was never a file on either side
		}
		fd := FileDiff{Path: k, Change: StatusModified}
		ma, mb := sa.modeOf(ea, eb), sb.modeOf(eb, ea)
		var hdr strings.Builder
		fmt.Fprintf(&hdr, "diff --git a/%s b/%s\n", k, k)
		switch {
		case !oldExists:
			fd.Change = StatusAdded
			fmt.Fprintf(&hdr, "new file mode %s\n", modeString(mb))
		case !newExists:
			fd.Change = StatusDeleted
			fmt.Fprintf(&hdr, "deleted file mode %s\n", modeString(ma))
		case ma != mb:
			fmt.Fprintf(&hdr, "old mode %s\nnew mode %s\n", modeString(ma), modeString(mb))
		}
		fd.Added, fd.Deleted, fd.Binary = textmerge.Stat(old, cur)
		fd.Patch = hdr.String() + textmerge.Unified(k, k, old, cur, oldExists, newExists)
		out = append(out, fd)
	}
	return out, nil
}

// dirRename is the diff of a directory renamed from one path to another.
func dirRename(from, to string) FileDiff {
	return FileDiff{Path: to + "/", From: from, Change: StatusRenamed,
		Patch: fmt.Sprintf("diff --git a/%s b/%s\nrename from %s\nrename to %s\n", from, to, from, to)}
}

// movedBack is where the directory renamed to k at state a went back
// to at state b: its origin, shown again by what is below the draft;
// "" when it did not.
func movedBack(a, b *cpState, k string) string {
	ea, eb := a.Entries[k], b.Entries[k]
	if ea == nil || ea.Kind != kindDir || ea.Origin == "" || eb != nil && eb.Origin == ea.Origin {
		return ""
	}
	if eo := b.Entries[ea.Origin]; eo != nil && (eo.Kind == kindWhiteout || eo.Opaque) {
		return "" // the origin is gone or replaced: k was deleted
	}
	if eb != nil && eb.Kind != kindWhiteout {
		return "" // something else is at k now
	}
	return ea.Origin
}

// sideOf is a path's content at state st where its entry is e (other,
// oe: the other side, whose base stands for what is below the draft
// when e is nil), and whether it exists as a file there.
func (tl *timeline) sideOf(st *cpState, e *entry, other *cpState, oe *entry) ([]byte, bool) {
	switch {
	case e == nil:
		if oe == nil || oe.Base == nil || !oe.Base.Exists || oe.Base.Kind != kindFile {
			return nil, false
		}
		b, err := tl.baseText(other, oe)
		return b, err == nil && b != nil
	case e.Kind == kindWhiteout:
		return nil, false
	case e.Kind == kindSymlink && st.Inodes[e.Ino] != nil:
		return []byte(st.Inodes[e.Ino].Target), true
	case e.Kind != kindFile:
		return nil, false
	}
	if cd := st.Data[e.Ino]; e.Ino != 0 && cd != nil {
		b, err := tl.chunks.get(cd.Chunks)
		return b, err == nil
	}
	b, err := tl.baseText(st, e) // a redirect: its origin's content
	return b, err == nil && b != nil
}

// modeOf is the mode of a path at st where its entry is e (nil: the
// other side's base, oe's).
func (st *cpState) modeOf(e, oe *entry) fs.FileMode {
	if e != nil && e.Ino != 0 && st.Inodes[e.Ino] != nil {
		return st.Inodes[e.Ino].Mode
	}
	if e != nil && e.Base != nil && e.Base.Exists {
		return e.Base.Mode
	}
	if oe != nil && oe.Base != nil && oe.Base.Exists {
		return oe.Base.Mode
	}
	return 0o644
}

// slicesContainsWithin reports whether k is one of keys or lies below one.
func slicesContainsWithin(keys []string, k string) bool {
	for _, s := range keys {
		if within(k, s) {
			return true
		}
	}
	return false
}
