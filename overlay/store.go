package overlay

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
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
	// formatVersion 2 has a write-ahead log; 1 (no log) is upgraded.
	formatVersion = []byte("2")
)

// firstDraftIno is where inode numbers of objects the draft creates start:
// far above any disk inode number, so the two never meet.
const firstDraftIno = 1 << 63

// Checkpoints happen once the write-ahead log holds this many records or
// bytes.
const (
	checkpointRecords = 4096
	checkpointBytes   = 16 << 20
)

// store persists one draft's metadata: every change is appended to a
// write-ahead log (draft.wal) before it returns, and the log is
// checkpointed into a bbolt database (draft.db) in batches. See
// "Persistence" in doc.go.
type store struct {
	db      *bolt.DB
	path    string
	walPath string

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
}

// pending is the sum of log records not yet in the database: for each
// key its latest encoded value (nil: deleted).
type pending struct {
	entries map[string][]byte
	inodes  map[uint64][]byte
	nextIno uint64
	log     []json.RawMessage
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

func openStore(dir string) (*store, error) {
	p := filepath.Join(dir, "draft.db")
	db, err := bolt.Open(p, 0o600, &bolt.Options{
		Timeout:        200 * time.Millisecond,
		NoSync:         true, // see "Persistence" in doc.go
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("overlay: %s is in use by another draftfs process: stop it, or talk to it through its control socket", p)
	}
	if err != nil {
		return nil, fmt.Errorf("overlay: open %s: %w (if it is damaged, move it away to start an empty draft)", p, err)
	}
	s := &store{db: db, path: p, walPath: filepath.Join(dir, "draft.wal")}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketEntries, bucketInodes, bucketMeta, bucketLog, bucketCommits} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		switch f := meta.Get(keyFormat); {
		case f == nil, string(f) == "1":
			return meta.Put(keyFormat, formatVersion)
		case string(f) != string(formatVersion):
			return fmt.Errorf("format %q is not the supported %q", f, formatVersion)
		}
		if v := meta.Get(keyWalApplied); len(v) == 8 {
			s.seq = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("overlay: %s: %w: %w (move it away to start an empty draft)", p, ErrCorrupt, err)
	}
	if err := s.recover(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// recover opens the write-ahead log and checkpoints what it holds: the
// records after the last checkpoint, up to the first one that is not
// whole (a write cut short by a crash, never acknowledged).
func (s *store) recover() error {
	wal, err := os.OpenFile(s.walPath, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("overlay: open %s: %w", s.walPath, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wal = wal
	buf, err := io.ReadAll(wal)
	if err != nil {
		wal.Close()
		return fmt.Errorf("overlay: read %s: %w", s.walPath, err)
	}
	for len(buf) >= walHeader {
		n := int(binary.LittleEndian.Uint32(buf))
		if n > len(buf)-walHeader || crc32.Checksum(buf[walHeader:walHeader+n], crcTable) != binary.LittleEndian.Uint32(buf[4:]) {
			break
		}
		var r walRecord
		if err := json.Unmarshal(buf[walHeader:walHeader+n], &r); err != nil {
			break
		}
		buf = buf[walHeader+n:]
		if r.Seq <= s.seq {
			continue // checkpointed before a crash cut the log's truncation
		}
		s.seq = r.Seq
		s.pending.add(&r)
		s.records++
	}
	if err := s.checkpointLocked(); err != nil {
		wal.Close()
		return fmt.Errorf("overlay: %s: replay %s: %w", s.path, s.walPath, err)
	}
	// Also drops a torn last record when there was nothing to replay.
	if err := wal.Truncate(0); err != nil {
		wal.Close()
		return fmt.Errorf("overlay: truncate %s: %w", s.walPath, err)
	}
	return nil
}

// close checkpoints the log and closes the store.
func (s *store) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.checkpointLocked()
	if cerr := s.wal.Close(); err == nil {
		err = cerr
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	return err
}

// sync makes every change written so far survive a power loss.
func (s *store) sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wal.Sync()
}

// entryKey is how an entry's key is stored: bbolt refuses an empty key,
// so the root is ".", which no other key can be.
func entryKey(key string) []byte {
	if key == "" {
		return []byte(".")
	}
	return []byte(key)
}

func keyOfEntry(k []byte) string {
	if string(k) == "." {
		return ""
	}
	return string(k)
}

func inoKey(ino uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], ino)
	return k[:]
}

// snapshot is a draft's whole metadata as loaded.
type snapshot struct {
	entries map[string]*entry
	inodes  map[uint64]*inode
	nextIno uint64
}

func (s *store) load() (*snapshot, error) {
	snap := &snapshot{entries: map[string]*entry{}, inodes: map[uint64]*inode{}, nextIno: firstDraftIno}
	err := s.db.View(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketEntries).ForEach(func(k, v []byte) error {
			e := new(entry)
			if err := json.Unmarshal(v, e); err != nil || e.Kind < kindWhiteout || e.Kind > kindSymlink {
				return fmt.Errorf("entry %q: unreadable record %q", k, v)
			}
			snap.entries[keyOfEntry(k)] = e
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Bucket(bucketInodes).ForEach(func(k, v []byte) error {
			n := new(inode)
			if len(k) != 8 || json.Unmarshal(v, n) != nil {
				return fmt.Errorf("inode %x: unreadable record", k)
			}
			snap.inodes[binary.BigEndian.Uint64(k)] = n
			return nil
		})
		if err != nil {
			return err
		}
		if v := tx.Bucket(bucketMeta).Get(keyNextIno); len(v) == 8 {
			snap.nextIno = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("overlay: %s: %w: %w (move it away to start an empty draft)", s.path, ErrCorrupt, err)
	}
	return snap, nil
}

// txn is a set of metadata changes made durable together.
type txn struct {
	entries map[string]*entry // nil value: delete
	inodes  map[uint64]*inode // nil value: delete
	nextIno uint64            // 0: unchanged
	log     []LogEntry
	commits map[uint64]*commitRecord // nil value: delete
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
	if l.Time.IsZero() {
		l.Time = time.Now()
	}
	t.log = append(t.log, l)
}

// record encodes t for the write-ahead log.
func (t *txn) record() (*walRecord, error) {
	r := &walRecord{NextIno: t.nextIno}
	var err error
	if r.Entries, err = encodeAll(t.entries); err != nil {
		return nil, err
	}
	if r.Inodes, err = encodeAll(t.inodes); err != nil {
		return nil, err
	}
	if r.Commits, err = encodeAll(t.commits); err != nil {
		return nil, err
	}
	for _, l := range t.log {
		buf, err := json.Marshal(l)
		if err != nil {
			return nil, err
		}
		r.Log = append(r.Log, buf)
	}
	return r, nil
}

// encodeAll encodes each value of m; a nil one stays nil (a delete).
func encodeAll[K comparable, V any](m map[K]*V) (map[K]json.RawMessage, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[K]json.RawMessage, len(m))
	for k, v := range m {
		if v == nil {
			out[k] = nil
			continue
		}
		buf, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		out[k] = buf
	}
	return out, nil
}

// write makes t durable against a crash of the process: once it returns
// the change is in the write-ahead log (in the kernel's page cache; sync
// takes it to the disk).
func (s *store) write(t *txn) error {
	r, err := t.record()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Seq = s.seq + 1
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	frame := make([]byte, walHeader, walHeader+len(body))
	binary.LittleEndian.PutUint32(frame, uint32(len(body)))
	binary.LittleEndian.PutUint32(frame[4:], crc32.Checksum(body, crcTable))
	frame = append(frame, body...)
	if _, err := s.wal.Write(frame); err != nil {
		// A part written would hide every later record: cut it off.
		if terr := s.wal.Truncate(s.size); terr != nil {
			err = fmt.Errorf("%w (and truncating the log: %v)", err, terr)
		}
		return fmt.Errorf("append to %s: %w", s.walPath, err)
	}
	s.seq, s.size = r.Seq, s.size+int64(len(frame))
	s.pending.add(r)
	s.records++
	if (s.records >= checkpointRecords || s.size >= checkpointBytes) && s.records >= s.retryAt {
		// The change is in the log: a failed checkpoint loses nothing
		// and is retried later.
		if s.checkpointLocked() != nil {
			s.retryAt = s.records + checkpointRecords
		}
	}
	return nil
}

// add merges r into p.
func (p *pending) add(r *walRecord) {
	if p.entries == nil {
		p.entries, p.inodes, p.commits = map[string][]byte{}, map[uint64][]byte{}, map[uint64][]byte{}
	}
	for k, v := range r.Entries {
		p.entries[k] = value(v)
	}
	for k, v := range r.Inodes {
		p.inodes[k] = value(v)
	}
	for k, v := range r.Commits {
		p.commits[k] = value(v)
	}
	if r.NextIno != 0 {
		p.nextIno = r.NextIno
	}
	p.log = append(p.log, r.Log...)
}

// value is an encoded value, nil for a delete.
func value(v json.RawMessage) []byte {
	if v == nil || string(v) == "null" {
		return nil
	}
	return v
}

// checkpointLocked moves the pending records into the database, makes it
// durable and empties the log. Must be called with s.mu held.
func (s *store) checkpointLocked() error {
	if s.records == 0 {
		return nil
	}
	p := &s.pending
	err := s.db.Update(func(tx *bolt.Tx) error {
		eb := tx.Bucket(bucketEntries)
		for k, v := range p.entries {
			if err := putOrDelete(eb, entryKey(k), v); err != nil {
				return err
			}
		}
		ib := tx.Bucket(bucketInodes)
		for ino, v := range p.inodes {
			if err := putOrDelete(ib, inoKey(ino), v); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		if p.nextIno != 0 {
			if err := meta.Put(keyNextIno, inoKey(p.nextIno)); err != nil {
				return err
			}
		}
		lb := tx.Bucket(bucketLog)
		for _, l := range p.log {
			seq, _ := lb.NextSequence()
			if err := lb.Put(inoKey(seq), l); err != nil {
				return err
			}
		}
		cb := tx.Bucket(bucketCommits)
		for id, v := range p.commits {
			if err := putOrDelete(cb, inoKey(id), v); err != nil {
				return err
			}
			// A commit's id came from the sequence without a sync: after
			// a power loss the log may hold ids the sequence lost.
			if id > cb.Sequence() {
				if err := cb.SetSequence(id); err != nil {
					return err
				}
			}
		}
		return meta.Put(keyWalApplied, inoKey(s.seq))
	})
	if err == nil {
		err = s.db.Sync()
	}
	if err == nil {
		err = s.wal.Truncate(0)
	}
	if err != nil {
		return fmt.Errorf("checkpoint %s into %s: %w", s.walPath, s.path, err)
	}
	s.pending, s.records, s.size, s.retryAt = pending{}, 0, 0, 0
	return nil
}

func putOrDelete(b *bolt.Bucket, k, v []byte) error {
	if v == nil {
		return b.Delete(k)
	}
	return b.Put(k, v)
}

// checkpoint brings the database up to date, for reading it.
func (s *store) checkpoint() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkpointLocked(); err != nil {
		return fmt.Errorf("overlay: %w", err)
	}
	return nil
}

// readLog returns the whole log, oldest first.
func (s *store) readLog() ([]LogEntry, error) {
	if err := s.checkpoint(); err != nil {
		return nil, err
	}
	var out []LogEntry
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketLog).ForEach(func(k, v []byte) error {
			var l LogEntry
			if err := json.Unmarshal(v, &l); err != nil {
				return fmt.Errorf("log record %x: %w", k, err)
			}
			out = append(out, l)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("overlay: read log of %s: %w: %w", s.path, ErrCorrupt, err)
	}
	return out, nil
}

// commits returns the commit records, oldest first.
func (s *store) commits() ([]*commitRecord, error) {
	if err := s.checkpoint(); err != nil {
		return nil, err
	}
	var out []*commitRecord
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketCommits).ForEach(func(k, v []byte) error {
			c := new(commitRecord)
			if err := json.Unmarshal(v, c); err != nil {
				return fmt.Errorf("commit record %x: %w", k, err)
			}
			c.ID = binary.BigEndian.Uint64(k)
			out = append(out, c)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("overlay: read commits of %s: %w: %w", s.path, ErrCorrupt, err)
	}
	return out, nil
}

func (s *store) nextCommitID() (uint64, error) {
	if err := s.checkpoint(); err != nil {
		return 0, err
	}
	var id uint64
	err := s.db.Update(func(tx *bolt.Tx) error {
		var err error
		id, err = tx.Bucket(bucketCommits).NextSequence()
		return err
	})
	return id, err
}
