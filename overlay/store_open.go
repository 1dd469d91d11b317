//go:build linux

package overlay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// openStore opens the store of the draft directory dir. Read only, it
// writes nothing at all: the database is opened read only (and may be
// missing: an empty draft), the log is read and kept in memory, and
// write refuses. Otherwise it replays the log into the database; when
// that cannot be written (a full disk) the records stay in the log and
// in memory, and the draft still opens.
func openStore(dir string, readOnly bool) (*store, error) {
	s := &store{path: filepath.Join(dir, "draft.db"), walPath: filepath.Join(dir, "draft.wal"), readOnly: readOnly, heads: map[uint64]*commitHead{},
		reserve: filepath.Join(dir, "reserve"), idle: checkpointIdle}
	if err := s.checkMissingDB(); err != nil {
		return nil, err
	}
	if err := s.openDB(); err != nil {
		return nil, err
	}
	if err := s.recover(); err != nil {
		s.closeDB()
		return nil, err
	}
	if !readOnly {
		s.keepReserve()
	}
	return s, nil
}

// checkMissingDB refuses a draft whose database is gone while its log is
// there: the database is made before the log, so it was lost, and
// replaying the log over an empty one would make an inconsistent draft.
func (s *store) checkMissingDB() error {
	if _, err := os.Lstat(s.path); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := os.Lstat(s.walPath); err != nil {
		return nil // a new draft
	}
	return fmt.Errorf("overlay: %s is missing but %s is there: the draft's records up to its last checkpoint are lost: %w; "+
		"nothing was changed: run draftfs check to see what can be recovered, and draftfs check --repair to rebuild the draft from what is left",
		s.path, s.walPath, ErrCorrupt)
}

// openBolt opens a bbolt database of the draft's (draft.db, the
// timeline's chunks.db) as the draft uses them: NoSync (see
// "Persistence" in doc.go), mapped boltMapSize from the start, and an
// error that says so when another process holds it.
func openBolt(p string, readOnly bool) (*bolt.DB, error) {
	var db *bolt.DB
	err := safe(func() (err error) {
		db, err = bolt.Open(p, 0o600, &bolt.Options{
			Timeout:         200 * time.Millisecond,
			NoSync:          true,
			NoFreelistSync:  true,
			FreelistType:    bolt.FreelistMapType,
			ReadOnly:        readOnly,
			InitialMmapSize: boltMapSize,
		})
		return err
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("overlay: %s is in use by another draftfs process: stop it, or talk to it through its control socket", p)
	}
	if err != nil {
		return nil, fmt.Errorf("overlay: open %s: %w: %w", p, ErrCorrupt, err)
	}
	return db, nil
}

// boltMapSize is the address space a draft's database is mapped with
// when opened. bbolt maps the file to twice its size and maps it again
// each time it outgrows that, in the middle of a checkpoint, copying
// every page the checkpoint has touched into the heap first (README,
// Runtime settings). Address space only: what is not read takes no
// memory, and the file grows as before.
const boltMapSize = 256 << 20

// openDB opens the database, creating it unless read only; read only and
// missing, the store has no database (an empty draft).
func (s *store) openDB() error {
	p := s.path
	if s.readOnly {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	if !s.readOnly {
		if err := walkDB(p); err != nil {
			return err
		}
	}
	var err error
	if s.db, err = openBolt(p, s.readOnly); err != nil {
		if errors.Is(err, ErrCorrupt) {
			return fmt.Errorf("%w (nothing was changed: run draftfs check to see what can be recovered)", err)
		}
		return err
	}
	// Read only at first: nothing is written before the log is read
	// and found whole (see initDB).
	err = s.view(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			return nil // a database no change reached yet
		}
		if f := meta.Get(keyFormat); f != nil && !earlierFormat(f) && string(f) != string(formatVersion) {
			return fmt.Errorf("format %q is not the supported %q", f, formatVersion)
		}
		if v := meta.Get(keyWalApplied); len(v) == 8 {
			s.applied = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	if err != nil {
		s.closeDB()
		return fmt.Errorf("overlay: %s: %w: %w (nothing was changed: run draftfs check to see what can be recovered)", p, ErrCorrupt, err)
	}
	s.seq = s.applied
	return nil
}

func (s *store) closeDB() {
	if s.db != nil {
		s.db.Close()
	}
	if s.wal != nil {
		s.wal.Close()
	}
}

// earlierFormat reports whether format f is one this version upgrades.
func earlierFormat(f []byte) bool { return string(f) == "1" || string(f) == "2" }

// initDB makes the buckets of a new database and upgrades an old one.
func (s *store) initDB() error {
	err := safe(func() error {
		return s.db.Update(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{bucketEntries, bucketInodes, bucketMeta, bucketLog, bucketCommits} {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return err
				}
			}
			meta := tx.Bucket(bucketMeta)
			if f := meta.Get(keyFormat); f == nil || earlierFormat(f) {
				return meta.Put(keyFormat, formatVersion)
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("overlay: %s: %w%s", s.path, err, s.fullHint(err))
	}
	return nil
}

// recover reads the write-ahead log: the records after the last
// checkpoint, up to a torn tail (a write a crash cut short, never
// acknowledged). Damage anywhere else is an error that names the file
// and the offset, and nothing is changed. Unless read only, the records
// are then checkpointed and the log emptied.
func (s *store) recover() error {
	flag := os.O_RDWR | os.O_CREATE | os.O_APPEND
	if s.readOnly {
		flag = os.O_RDONLY
	}
	wal, err := os.OpenFile(s.walPath, flag, 0o600)
	if s.readOnly && errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("overlay: open %s: %w", s.walPath, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wal = wal
	buf, err := io.ReadAll(wal)
	if err != nil {
		return fmt.Errorf("overlay: read %s: %w", s.walPath, err)
	}
	scan := scanWAL(buf, s.applied)
	if scan.damage != nil {
		return fmt.Errorf("overlay: %w", scan.damage.err(s.walPath))
	}
	for _, r := range scan.records {
		s.seq = r.Seq
		s.pending.add(r.puts())
		s.records++
	}
	s.size = int64(scan.whole)
	if s.readOnly {
		return nil
	}
	if err := s.initDB(); err != nil && s.records == 0 {
		// With records to replay, the draft still opens (a full
		// disk); the checkpoint below fails the same way.
		return err
	}
	if scan.whole < len(buf) {
		// A torn tail, read and found to be no record: later records
		// must not follow it.
		if err := wal.Truncate(int64(scan.whole)); err != nil {
			return fmt.Errorf("overlay: drop the torn tail of %s: %w", s.walPath, err)
		}
	}
	if err := s.checkpointLocked(); err != nil {
		// Most likely a full disk: the records stay in the log and in
		// memory, and the next checkpoint tries again.
		s.retryAt = s.records + checkpointRecords
		s.checkpointErr = err
		return nil
	}
	if s.records == 0 && scan.whole > 0 {
		// Only records a checkpoint already held.
		if err := wal.Truncate(0); err != nil {
			return fmt.Errorf("overlay: truncate %s: %w", s.walPath, err)
		}
		s.size = 0
	}
	return nil
}

// walkDB reads every page of the database at p, if there is one, read
// only. Opened for writing, bbolt rebuilds its free list by walking the
// pages in a goroutine of its own, where an assertion on a damaged page
// is a panic no caller can recover: the walk here meets the damage
// first, where it is recovered into an error.
func walkDB(p string) error {
	if _, err := os.Lstat(p); err != nil {
		return nil
	}
	var db *bolt.DB
	err := safe(func() (err error) {
		db, err = bolt.Open(p, 0o600, &bolt.Options{ReadOnly: true, Timeout: 200 * time.Millisecond})
		return err
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return fmt.Errorf("overlay: %s is in use by another draftfs process: stop it, or talk to it through its control socket", p)
	}
	if err == nil {
		err = safe(func() error {
			defer db.Close()
			return db.View(func(tx *bolt.Tx) error {
				return tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
					return b.ForEach(func(k, v []byte) error { return nil })
				})
			})
		})
	}
	if err != nil {
		return fmt.Errorf("overlay: %s: %w: %w (nothing was changed: run draftfs check to see what can be recovered)", p, ErrCorrupt, err)
	}
	return nil
}
