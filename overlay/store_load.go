//go:build linux

package overlay

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Loading a draft's state: the database's buckets decoded into the
// snapshot a draft starts from.

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

// load reads the draft's metadata: the database, with the records of
// the log not checkpointed yet over it.
func (s *store) load() (*snapshot, error) {
	snap := &snapshot{entries: map[string]*entry{}, inodes: map[uint64]*inode{}, nextIno: firstDraftIno}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.view(func(tx *bolt.Tx) error {
		err := forEach(tx, bucketEntries, func(k, v []byte) error {
			e, err := decodeEntry(k, v)
			snap.entries[keyOfEntry(k)] = e
			return err
		})
		if err != nil {
			return err
		}
		err = forEach(tx, bucketInodes, func(k, v []byte) error {
			n, err := decodeInode(k, v)
			if err == nil {
				snap.inodes[binary.BigEndian.Uint64(k)] = n
			}
			return err
		})
		if err != nil {
			return err
		}
		if b := tx.Bucket(bucketMeta); b != nil {
			if v := b.Get(keyNextIno); len(v) == 8 {
				snap.nextIno = binary.BigEndian.Uint64(v)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("overlay: %s: %w: %w (nothing was changed: run draftfs check to see what can be recovered)", s.path, ErrCorrupt, err)
	}
	p := &s.pending
	for k, v := range p.entries {
		if v == nil {
			delete(snap.entries, k)
			continue
		}
		e, err := decodeEntry([]byte(k), v)
		if err != nil {
			return nil, fmt.Errorf("overlay: %s: %w: %w", s.walPath, ErrCorrupt, err)
		}
		snap.entries[k] = e
	}
	for ino, v := range p.inodes {
		if v == nil {
			delete(snap.inodes, ino)
			continue
		}
		n, err := decodeInode(inoKey(ino), v)
		if err != nil {
			return nil, fmt.Errorf("overlay: %s: %w: %w", s.walPath, ErrCorrupt, err)
		}
		snap.inodes[ino] = n
	}
	if p.nextIno != 0 {
		snap.nextIno = p.nextIno
	}
	return snap, nil
}

func decodeEntry(k, v []byte) (*entry, error) {
	e := new(entry)
	if err := json.Unmarshal(v, e); err != nil || e.Kind < kindWhiteout || e.Kind > kindSpecial {
		return nil, fmt.Errorf("entry %q: unreadable record %q", k, v)
	}
	return e, nil
}

func decodeInode(k, v []byte) (*inode, error) {
	n := new(inode)
	if len(k) != 8 || json.Unmarshal(v, n) != nil {
		return nil, fmt.Errorf("inode %x: unreadable record", k)
	}
	return n, nil
}
