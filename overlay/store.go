//go:build linux

package overlay

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sync"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Buckets of a draft's database.
var (
	bucketEntries = []byte("entries") // key → entry
	bucketInodes  = []byte("inodes")  // ino (big endian) → inode
	bucketMeta    = []byte("meta")    // nextIno, format, walApplied
	bucketLog     = []byte("log")     // sequence → LogEntry
	bucketCommits = []byte("commits") // sequence → commitRecord
	keyNextIno    = []byte("nextIno")
	keyFormat     = []byte("format")
	// keyWalApplied: the sequence number of the last write-ahead log
	// record checkpointed into the database.
	keyWalApplied = []byte("walApplied")
	// formatVersion 3 has inodes whose data file is numbered
	// (inode.File), which an earlier version would take for garbage:
	// it refuses the database instead. 2 (a write-ahead log) and 1 (no
	// log) are upgraded.
	formatVersion = []byte("3")
)

// firstDraftIno is where inode numbers of objects the draft creates start:
// far above any disk inode number, so the two never meet.
const firstDraftIno = 1 << 63

// DraftIno reports whether ino ([Attr].Ino) is a number the draft gave
// an object it created, rather than the disk's.
func DraftIno(ino uint64) bool { return ino >= firstDraftIno }

// A checkpoint is due once the write-ahead log holds checkpointRecords
// records. It happens when the draft's changes pause for checkpointIdle,
// not in the change that reached the count, so that a burst of changes
// (an untar) is not held up by it, and at once in the change that takes
// the log to checkpointRecordsMax records or checkpointBytes bytes.
const (
	checkpointRecords    = 4096
	checkpointRecordsMax = 4 * checkpointRecords
	checkpointBytes      = 16 << 20
)

// checkpointIdle: see checkpointRecords. A variable for tests, read
// when a store opens.
var checkpointIdle = 100 * time.Millisecond

// store persists one draft's metadata: every change is appended to a
// write-ahead log (draft.wal) before it returns, and the log is
// checkpointed into a bbolt database (draft.db) in batches. See
// "Persistence" in doc.go.
type store struct {
	db       *bolt.DB // nil: read only, and no database yet
	path     string
	walPath  string
	reserve  string // see keepReserve
	readOnly bool
	applied  uint64        // read only after open: the database's walApplied
	idle     time.Duration // read only: checkpointIdle

	mu      sync.Mutex // protects the following
	wal     *os.File   // opened O_APPEND
	seq     uint64     // sequence number of the last record written
	size    int64      // bytes of whole records in wal
	records int        // records in wal not yet checkpointed
	pending pending    // what those records change
	// retryAt: after a failed checkpoint (the records stay in the log,
	// nothing is lost) the next is tried at this many records, or at
	// close, or before the database is read.
	retryAt int
	// checkpointErr is why the last checkpoint failed, nil once one
	// succeeds.
	checkpointErr error
	// lastWrite is when the last record was written once a checkpoint
	// was due; idleArmed: a timer will look whether the changes paused
	// since (see checkpointWhenIdle); closed: the store was closed.
	lastWrite time.Time
	idleArmed bool
	closed    bool
	// heads are the heads of the commit records written or decoded, by
	// id (see commitHead).
	heads map[uint64]*commitHead
	// scratch is the buffer records are encoded in (see txn.encode).
	scratch []byte
}

// pending is the sum of log records not yet in the database: for each
// key its latest encoded value (nil: deleted).
type pending struct {
	entries map[string][]byte
	inodes  map[uint64][]byte
	nextIno uint64
	log     [][]byte
	commits map[uint64][]byte
}

// walRecord is one txn in the write-ahead log, values encoded as in the
// database (null: delete).
type walRecord struct {
	Seq     uint64                     `json:"q"`
	Entries map[string]json.RawMessage `json:"e,omitempty"`
	Inodes  map[uint64]json.RawMessage `json:"i,omitempty"`
	NextIno uint64                     `json:"n,omitempty"`
	Log     []json.RawMessage          `json:"l,omitempty"`
	Commits map[uint64]json.RawMessage `json:"c,omitempty"`
}

// walHeader: each record is framed as its length and its CRC-32C (both
// little endian uint32), then the record's JSON.
const walHeader = 8

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// close checkpoints the log and closes the store.
func (s *store) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var err error
	if !s.readOnly {
		err = s.checkpointLocked()
		if errors.Is(err, syscall.ENOSPC) {
			// A full disk: the records stay in the log, which the
			// next open replays; nothing is lost once it is synced.
			err = s.wal.Sync()
		}
	}
	if s.wal != nil {
		if cerr := s.wal.Close(); err == nil {
			err = cerr
		}
	}
	if s.db != nil {
		if cerr := s.db.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// sync makes every change written so far survive a power loss.
func (s *store) sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.readOnly {
		return nil
	}
	return s.wal.Sync()
}

// view runs fn in a read transaction, a damaged database's panics turned
// into errors; with no database (read only, a new draft) fn sees an
// empty one.
func (s *store) view(fn func(tx *bolt.Tx) error) error {
	if s.db == nil {
		return nil
	}
	return safe(func() error { return s.db.View(fn) })
}

// forEach calls fn for each pair of bucket name, which may be missing
// in a database opened read only.
func forEach(tx *bolt.Tx, name []byte, fn func(k, v []byte) error) error {
	b := tx.Bucket(name)
	if b == nil {
		return nil
	}
	return b.ForEach(fn)
}

// safe runs fn, turning a panic into an error: bbolt asserts what it
// reads from its pages, and a damaged page must be an error that says
// what to do, not a crash of every command.
func safe(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: the database is damaged (%v)", ErrCorrupt, r)
		}
	}()
	return fn()
}

// txn is a set of metadata changes made durable together.
type txn struct {
	entries map[string]*entry // nil value: delete
	inodes  map[uint64]*inode // nil value: delete
	nextIno uint64            // 0: unchanged
	// made is an inode t makes with its data file, whose ctime that
	// making set (0: none).
	made uint64
	// unlinked are inodes whose data file the change already removed
	// (a commit that linked them into place): finish leaves them be.
	unlinked map[uint64]bool
	log      []LogEntry
	commits  map[uint64]*commitRecord // nil value: delete
	// reserved: the change may use the space kept aside for it when the
	// state's disk is full (see keepReserve).
	reserved bool
}

func (t *txn) putEntry(key string, e *entry) {
	if t.entries == nil {
		t.entries = map[string]*entry{}
	}
	t.entries[key] = e
}

func (t *txn) putInode(ino uint64, n *inode) {
	if t.inodes == nil {
		t.inodes = map[uint64]*inode{}
	}
	t.inodes[ino] = n
}

func (t *txn) addLog(l LogEntry) {
	l.Source, l.By = l.Source.split()
	if l.Time.IsZero() {
		l.Time = time.Now()
	}
	t.log = append(t.log, l)
}

// write makes t durable against a crash of the process: once it returns
// the change is in the write-ahead log (in the kernel's page cache; sync
// takes it to the disk).
func (s *store) write(t *txn) error {
	if s.readOnly {
		return fmt.Errorf("%s: %w", s.path, errReadOnly)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seq := s.seq + 1
	frame, puts, err := t.encode(seq, &s.scratch)
	if err != nil {
		return err
	}
	err = s.append(frame)
	if errors.Is(err, syscall.ENOSPC) && t.reserved && os.Remove(s.reserve) == nil {
		// The space kept for this: a discard frees space, and must
		// not be refused for want of it.
		err = s.append(frame)
	}
	if err != nil {
		return fmt.Errorf("append to %s: %w%s", s.walPath, err, s.fullHint(err))
	}
	s.seq, s.size = seq, s.size+int64(len(frame))
	s.pending.add(puts)
	for id, c := range t.commits {
		if c == nil {
			delete(s.heads, id)
			continue
		}
		h := c.head()
		h.ID = id
		s.heads[id] = h
	}
	s.records++
	switch {
	case s.records < s.retryAt:
	case s.records >= checkpointRecordsMax || s.size >= checkpointBytes:
		// The change is in the log: a failed checkpoint loses nothing
		// and is retried later.
		s.checkpointOrRetry()
	case s.records >= checkpointRecords:
		s.lastWrite = time.Now()
		if !s.idleArmed {
			s.idleArmed = true
			time.AfterFunc(s.idle, s.checkpointWhenIdle)
		}
	}
	return nil
}

// checkpointWhenIdle checkpoints the log, due since a change took it to
// checkpointRecords records, once no change came for s.idle.
func (s *store) checkpointWhenIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.records < checkpointRecords || s.records < s.retryAt {
		s.idleArmed = false // done meanwhile, or not due again yet
		return
	}
	if wait := s.idle - time.Since(s.lastWrite); wait > 0 {
		time.AfterFunc(wait, s.checkpointWhenIdle)
		return
	}
	s.idleArmed = false
	s.checkpointOrRetry()
}

// checkpointOrRetry checkpoints the log, or, when that fails, has the
// next try wait for checkpointRecords more records (or close, or a read
// of the database). Must be called with s.mu held.
func (s *store) checkpointOrRetry() {
	if s.checkpointLocked() != nil {
		s.retryAt = s.records + checkpointRecords
	}
}

// append writes one frame to the log, or nothing. Must be called with
// s.mu held.
func (s *store) append(frame []byte) error {
	_, err := s.wal.Write(frame)
	if err != nil {
		// A part written would hide every later record: cut it off.
		if terr := s.wal.Truncate(s.size); terr != nil {
			err = fmt.Errorf("%w (and truncating the log: %v)", err, terr)
		}
	}
	return err
}

// add merges r into p.
func (p *pending) add(r *recordPuts) {
	if p.entries == nil {
		p.entries, p.inodes, p.commits = map[string][]byte{}, map[uint64][]byte{}, map[uint64][]byte{}
	}
	for _, e := range r.entries {
		p.entries[e.key] = e.v
	}
	for _, e := range r.inodes {
		p.inodes[e.key] = e.v
	}
	for _, e := range r.commits {
		p.commits[e.key] = e.v
	}
	if r.nextIno != 0 {
		p.nextIno = r.nextIno
	}
	p.log = append(p.log, r.log...)
}

// puts is what r, read back from the log, puts in the database.
func (r *walRecord) puts() *recordPuts {
	p := &recordPuts{nextIno: r.NextIno}
	for _, l := range r.Log {
		p.log = append(p.log, l)
	}
	for k, v := range r.Entries {
		p.entries = append(p.entries, put[string]{k, value(v)})
	}
	for k, v := range r.Inodes {
		p.inodes = append(p.inodes, put[uint64]{k, value(v)})
	}
	for k, v := range r.Commits {
		p.commits = append(p.commits, put[uint64]{k, value(v)})
	}
	return p
}

// value is an encoded value, nil for a delete.
func value(v json.RawMessage) []byte {
	if v == nil || string(v) == "null" {
		return nil
	}
	return v
}
