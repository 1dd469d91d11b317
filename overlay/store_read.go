//go:build linux

package overlay

import (
	"bytes"
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

// commitHead is what undo and collection read of every commit record:
// its state and the blobs it refers to. The store keeps the head of each
// record it wrote or decoded (store.heads): decoding a record of 10,000
// ops took 15-30 ms, and every commit and undo looked at all of them.
type commitHead struct {
	ID    uint64
	State string
	Blobs []string
}

// head is r's head.
func (r *commitRecord) head() *commitHead {
	h := &commitHead{ID: r.ID, State: r.State}
	for _, e := range r.Entry {
		if e != nil && e.Base != nil && e.Base.Kept {
			h.Blobs = append(h.Blobs, e.Base.Hash)
		}
	}
	for _, op := range r.Ops {
		if op.Blob != "" {
			h.Blobs = append(h.Blobs, op.Blob)
		}
	}
	for _, kp := range r.Keep {
		if kp.Rest != "" {
			h.Blobs = append(h.Blobs, kp.Rest)
		}
	}
	return h
}

// commitHeads returns the heads of the commit records, oldest first.
func (s *store) commitHeads() ([]*commitHead, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	byID, err := s.commitBytesLocked()
	var out []*commitHead
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		h := s.heads[id]
		if h == nil && err == nil {
			var c *commitRecord
			if c, err = decodeCommit(id, byID[id]); err == nil {
				h = c.head()
				s.heads[id] = h
			}
		}
		out = append(out, h)
	}
	if err != nil {
		return nil, s.commitsErr(err)
	}
	return out, nil
}

// commit returns commit record id.
func (s *store) commit(id uint64) (*commitRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.pending.commits[id]
	var err error
	if !ok {
		err = s.view(func(tx *bolt.Tx) error {
			if b := tx.Bucket(bucketCommits); b != nil {
				v = bytes.Clone(b.Get(binary.BigEndian.AppendUint64(nil, id)))
			}
			return nil
		})
	}
	var c *commitRecord
	if err == nil && v == nil {
		err = fmt.Errorf("commit record %d: missing", id)
	}
	if err == nil {
		c, err = decodeCommit(id, v)
	}
	if err != nil {
		return nil, s.commitsErr(err)
	}
	return c, nil
}

// commits returns the commit records, oldest first.
func (s *store) commits() ([]*commitRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	byID, err := s.commitBytesLocked()
	var out []*commitRecord
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		c := &commitRecord{ID: id}
		if err == nil {
			c, err = decodeCommit(id, byID[id])
		}
		out = append(out, c)
	}
	if err != nil {
		return nil, s.commitsErr(err)
	}
	return out, nil
}

// commitBytesLocked returns the encoded commit records by id, the
// database's with the log's over them. The values may point into the
// database's memory map: read them with s.mu held. Must be called with
// s.mu held.
func (s *store) commitBytesLocked() (map[uint64][]byte, error) {
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
	return byID, err
}

// testHookDecodeCommit, when set by a test, is called with the id of
// each commit record decoded.
var testHookDecodeCommit func(id uint64)

// commitsErr says that the commit records could not be read.
func (s *store) commitsErr(err error) error {
	return fmt.Errorf("overlay: read commits of %s: %w: %w", s.path, ErrCorrupt, err)
}

// decodeCommit decodes commit record id.
func decodeCommit(id uint64, v []byte) (*commitRecord, error) {
	if testHookDecodeCommit != nil {
		testHookDecodeCommit(id)
	}
	c := &commitRecord{ID: id}
	if err := json.Unmarshal(v, c); err != nil {
		return c, fmt.Errorf("commit record %d: %w", id, err)
	}
	c.ID = id
	return c, nil
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
