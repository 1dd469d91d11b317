package overlay

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Buckets of a draft's database.
var (
	bucketEntries = []byte("entries") // key → entry
	bucketInodes  = []byte("inodes")  // ino (big endian) → inode
	bucketMeta    = []byte("meta")    // nextIno, format
	bucketLog     = []byte("log")     // sequence → LogEntry
	bucketCommits = []byte("commits") // sequence → commitRecord
	keyNextIno    = []byte("nextIno")
	keyFormat     = []byte("format")
	formatVersion = []byte("1")
)

// firstDraftIno is where inode numbers of objects the draft creates start:
// far above any disk inode number, so the two never meet.
const firstDraftIno = 1 << 63

// store persists one draft's metadata in bbolt.
type store struct {
	db   *bolt.DB
	path string
}

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
	s := &store{db: db, path: p}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketEntries, bucketInodes, bucketMeta, bucketLog, bucketCommits} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		switch f := meta.Get(keyFormat); {
		case f == nil:
			return meta.Put(keyFormat, formatVersion)
		case string(f) != string(formatVersion):
			return fmt.Errorf("format %q is not the supported %q", f, formatVersion)
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("overlay: %s: %w: %w (move it away to start an empty draft)", p, ErrCorrupt, err)
	}
	return s, nil
}

func (s *store) close() error { return s.db.Close() }

func (s *store) sync() error { return s.db.Sync() }

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

func (s *store) write(t *txn) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		eb := tx.Bucket(bucketEntries)
		for k, e := range t.entries {
			if e == nil {
				if err := eb.Delete(entryKey(k)); err != nil {
					return err
				}
				continue
			}
			if err := putJSON(eb, entryKey(k), e); err != nil {
				return err
			}
		}
		ib := tx.Bucket(bucketInodes)
		for ino, n := range t.inodes {
			if n == nil {
				if err := ib.Delete(inoKey(ino)); err != nil {
					return err
				}
				continue
			}
			if err := putJSON(ib, inoKey(ino), n); err != nil {
				return err
			}
		}
		if t.nextIno != 0 {
			if err := tx.Bucket(bucketMeta).Put(keyNextIno, inoKey(t.nextIno)); err != nil {
				return err
			}
		}
		lb := tx.Bucket(bucketLog)
		for _, l := range t.log {
			seq, _ := lb.NextSequence()
			if err := putJSON(lb, inoKey(seq), l); err != nil {
				return err
			}
		}
		cb := tx.Bucket(bucketCommits)
		for id, c := range t.commits {
			if c == nil {
				if err := cb.Delete(inoKey(id)); err != nil {
					return err
				}
				continue
			}
			if err := putJSON(cb, inoKey(id), c); err != nil {
				return err
			}
		}
		return nil
	})
}

func putJSON(b *bolt.Bucket, k []byte, v any) error {
	buf, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(k, buf)
}

// readLog returns the whole log, oldest first.
func (s *store) readLog() ([]LogEntry, error) {
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
	var id uint64
	err := s.db.Update(func(tx *bolt.Tx) error {
		var err error
		id, err = tx.Bucket(bucketCommits).NextSequence()
		return err
	})
	return id, err
}
