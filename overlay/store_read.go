//go:build linux

package overlay

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// readLog returns the whole log, oldest first.
func (s *store) readLog() ([]LogEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []LogEntry
	decode := func(k, v []byte) error {
		var l LogEntry
		if err := json.Unmarshal(v, &l); err != nil {
			return fmt.Errorf("log record %x: %w", k, err)
		}
		out = append(out, l)
		return nil
	}
	err := s.view(func(tx *bolt.Tx) error { return forEach(tx, bucketLog, decode) })
	for i, v := range s.pending.log {
		if err == nil {
			err = decode([]byte(fmt.Sprint("pending ", i)), v)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("overlay: read log of %s: %w: %w", s.path, ErrCorrupt, err)
	}
	return out, nil
}

// logLen is how many entries the log holds: readLog's length, at no
// cost but a read of the log bucket's sequence.
func (s *store) logLen() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n uint64
	err := s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketLog); b != nil {
			n = b.Sequence()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("overlay: read log of %s: %w", s.path, err)
	}
	return n + uint64(len(s.pending.log)), nil
}

// commits returns the commit records, oldest first.
func (s *store) commits() ([]*commitRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	byID := map[uint64][]byte{}
	err := s.view(func(tx *bolt.Tx) error {
		return forEach(tx, bucketCommits, func(k, v []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("commit record %x: bad key", k)
			}
			byID[binary.BigEndian.Uint64(k)] = v
			return nil
		})
	})
	for id, v := range s.pending.commits {
		if v == nil {
			delete(byID, id)
		} else {
			byID[id] = v
		}
	}
	var out []*commitRecord
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		c := new(commitRecord)
		if err == nil {
			if jerr := json.Unmarshal(byID[id], c); jerr != nil {
				err = fmt.Errorf("commit record %d: %w", id, jerr)
			}
		}
		c.ID = id
		out = append(out, c)
	}
	if err != nil {
		return nil, fmt.Errorf("overlay: read commits of %s: %w: %w", s.path, ErrCorrupt, err)
	}
	return out, nil
}

// nextCommitID is a commit id never handed out before: above the
// database's sequence (which a checkpoint keeps at or above every id it
// saw) and every id in the log. Only the commit record written with it
// takes it, so a commit must clear anything a crash left under its id.
func (s *store) nextCommitID() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var id uint64
	err := s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketCommits); b != nil {
			id = b.Sequence()
			if k, _ := b.Cursor().Last(); len(k) == 8 {
				id = max(id, binary.BigEndian.Uint64(k))
			}
		}
		return nil
	})
	for k := range s.pending.commits {
		id = max(id, k)
	}
	return id + 1, err
}
