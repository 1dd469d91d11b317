//go:build linux

package overlay

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// errReadOnly: a change to a draft opened read only.
var errReadOnly = errors.New("the draft is open read only")

// walScan is what a write-ahead log holds.
type walScan struct {
	records []*walRecord // whole records after the last checkpoint
	whole   int          // bytes of whole records, from the start
	skipped int          // whole records a checkpoint already held
	damage  *walDamage   // nil: the log is whole, up to a torn tail
}

// walDamage is a record that cannot be read with whole records after
// it: not a write a crash cut short (that is always the last), so
// acknowledged changes would be lost by dropping it.
type walDamage struct {
	offset int // where the damaged record starts
	index  int // its number, from 0
	after  int // whole records found after it
	// afterOffset is where the first of them starts.
	afterOffset int
}

func (d *walDamage) err(path string) error {
	return fmt.Errorf("%s is damaged at offset %d (record %d): %d later record(s) from offset %d cannot be replayed in order: %w; "+
		"nothing was changed: run draftfs check to see what can be recovered, and draftfs check --repair to keep the damaged file aside and replay the records that can be read",
		path, d.offset, d.index+1, d.after, d.afterOffset, ErrCorrupt)
}

// scanWAL reads the records of buf, a whole log, skipping those at or
// below applied (a checkpoint held them).
func scanWAL(buf []byte, applied uint64) walScan {
	var s walScan
	last := applied
	off := 0
	for i := 0; ; i++ {
		r, n := frameAt(buf, off)
		if r == nil {
			if off < len(buf) {
				s.damage = damageAt(buf, off, i, last)
			}
			return s
		}
		off += n
		s.whole = off
		if r.Seq <= applied {
			s.skipped++
			continue // checkpointed before a crash cut the log's truncation
		}
		last = r.Seq
		s.records = append(s.records, r)
	}
}

// frameAt decodes the record framed at off: nil when there is no whole
// one there.
func frameAt(buf []byte, off int) (*walRecord, int) {
	if len(buf)-off < walHeader {
		return nil, 0
	}
	n := int(binary.LittleEndian.Uint32(buf[off:]))
	if n > len(buf)-off-walHeader {
		return nil, 0
	}
	body := buf[off+walHeader : off+walHeader+n]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(buf[off+4:]) {
		return nil, 0
	}
	r := new(walRecord)
	if err := json.Unmarshal(body, r); err != nil || r.Seq == 0 {
		return nil, 0
	}
	return r, walHeader + n
}

// damageAt looks past the unreadable record at off for whole records
// that follow it: none, and it is a torn tail (nil).
func damageAt(buf []byte, off, index int, last uint64) *walDamage {
	d := &walDamage{offset: off, index: index}
	for p := off + 1; p < len(buf); {
		i := bytes.Index(buf[p:], []byte(`{"q":`))
		if i < 0 {
			break
		}
		start := p + i - walHeader
		p += i + 1
		if start <= off {
			continue
		}
		r, n := frameAt(buf, start)
		if r == nil || r.Seq <= last {
			continue
		}
		if d.after == 0 {
			d.afterOffset = start
		}
		d.after++
		p = start + n
	}
	if d.after == 0 {
		return nil
	}
	return d
}

// reserveSize is the space kept aside in the state directory for the
// changes that free space (a discard): on a full disk the reserve goes
// and they still get their record written.
const reserveSize = 1 << 20

// keepReserve makes the reserve file when missing. Best effort: on a
// full disk there is none until space is freed.
func (s *store) keepReserve() {
	if _, err := os.Lstat(s.reserve); err == nil {
		return
	}
	f, err := os.OpenFile(s.reserve, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	err = unix.Fallocate(int(f.Fd()), 0, 0, reserveSize)
	f.Close()
	if err != nil {
		os.Remove(s.reserve)
	}
}

// fullHint says, for an error of a full disk, what to free and how much
// the state holds.
func (s *store) fullHint(err error) string { return fullHint(filepath.Dir(s.path), err) }

// fullHint is store.fullHint for the state directory dir of a draft.
func fullHint(dir string, err error) string {
	if !errors.Is(err, syscall.ENOSPC) {
		return ""
	}
	return fmt.Sprintf(" (the disk of the state directory %s is full; the draft's state holds %s: free space on that disk, "+
		"or run draftfs gc to drop undo data it no longer needs, or draftfs discard to drop draft changes)", dir, FormatSize(dirSize(dir)))
}

// checkpointLocked moves the pending records into the database, makes it
// durable and empties the log. Must be called with s.mu held.
func (s *store) checkpointLocked() error {
	if s.records == 0 || s.readOnly {
		return nil
	}
	err := safe(func() error { return s.db.Update(s.checkpointTx) })
	if err == nil {
		err = s.db.Sync()
	}
	if err == nil {
		err = s.wal.Truncate(0)
	}
	if err != nil {
		s.checkpointErr = err
		return fmt.Errorf("checkpoint %s into %s: %w%s", s.walPath, s.path, err, s.fullHint(err))
	}
	s.pending, s.records, s.size, s.retryAt, s.checkpointErr = pending{}, 0, 0, 0, nil
	s.keepReserve()
	return nil
}

// checkpointTx moves the pending records into the database. Must be
// called with s.mu held.
func (s *store) checkpointTx(tx *bolt.Tx) error {
	p := &s.pending
	{
		if err := putSorted(tx.Bucket(bucketEntries), p.entries, entryKey); err != nil {
			return err
		}
		if err := putSorted(tx.Bucket(bucketInodes), p.inodes, inoKey); err != nil {
			return err
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
	}
}

// putSorted puts each value of m in b under key(k), in the order of
// those keys, and deletes the keys of nil values: bbolt inserts each
// put into its leaf's sorted slice of items, and in the map's order
// every insert moved half of them: a checkpoint of 4,096 new files was
// quadratic in them (see BenchmarkCheckpointWAL). Deletes gain nothing
// from an order.
func putSorted[K comparable](b *bolt.Bucket, m map[K][]byte, key func(K) []byte) error {
	type item struct{ k, v []byte }
	items := make([]item, 0, len(m))
	for k, v := range m {
		if v == nil {
			if err := b.Delete(key(k)); err != nil {
				return err
			}
			continue
		}
		items = append(items, item{key(k), v})
	}
	slices.SortFunc(items, func(a, b item) int { return bytes.Compare(a.k, b.k) })
	for _, it := range items {
		if err := b.Put(it.k, it.v); err != nil {
			return err
		}
	}
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
