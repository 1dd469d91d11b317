//go:build linux

package overlay

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

func decodeJSON(v []byte, out any) error { return json.Unmarshal(v, out) }

// repairDraft keeps the damaged files aside and writes a new database
// from what sv holds; data files no record names go to lost+found/.
func repairDraft(r *CheckReport, sv *salvage, dir string, dbBad bool) error {
	suffix := ".damaged-" + time.Now().UTC().Format("20060102T150405")
	dbPath, walPath := filepath.Join(dir, "draft.db"), filepath.Join(dir, "draft.wal")
	aside := func(p string) error {
		if _, err := os.Lstat(p); err != nil {
			return nil
		}
		if err := os.Rename(p, p+suffix); err != nil {
			return fmt.Errorf("overlay: repair: keep %s aside: %w", p, err)
		}
		r.Repaired = append(r.Repaired, fmt.Sprintf("kept %s aside as %s", filepath.Base(p), filepath.Base(p)+suffix))
		return nil
	}
	// The log's records are all in sv: both files are rebuilt.
	if err := aside(walPath); err != nil {
		return err
	}
	if dbBad {
		if err := aside(dbPath); err != nil {
			return err
		}
	} else if err := os.Rename(dbPath, dbPath+".old"); err != nil {
		return fmt.Errorf("overlay: repair: %w", err)
	}
	for k, v := range sv.entries {
		if e, err := decodeEntry([]byte(k), v); err != nil || e.Ino != 0 && sv.inodes[e.Ino] == nil {
			delete(sv.entries, k)
			r.Repaired = append(r.Repaired, fmt.Sprintf("dropped entry %q: its inode was lost", k))
		}
	}
	if err := writeSalvage(dbPath, sv); err != nil {
		return fmt.Errorf("overlay: repair: write a new %s: %w", dbPath, err)
	}
	os.Remove(dbPath + ".old")
	r.Repaired = append(r.Repaired, fmt.Sprintf("wrote a new draft.db: %d entries, %d inodes, %d commits, %d log entries",
		len(sv.entries), len(sv.inodes), len(sv.commits), len(sv.log)))
	owned := map[string]bool{}
	for _, v := range sv.entries {
		e, err := decodeEntry(nil, v)
		if err != nil || e.Ino == 0 {
			continue
		}
		n, err := decodeInode(inoKey(e.Ino), sv.inodes[e.Ino])
		if err != nil {
			n = &inode{}
		}
		owned[n.dataName(e.Ino)] = true
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "data"))
	for _, e := range ents {
		if !stray(e, owned) {
			continue
		}
		lost := filepath.Join(dir, "lost+found")
		if err := os.MkdirAll(lost, 0o700); err != nil {
			return fmt.Errorf("overlay: repair: %w", err)
		}
		if err := os.Rename(filepath.Join(dir, "data", e.Name()), filepath.Join(lost, e.Name())); err != nil {
			return fmt.Errorf("overlay: repair: %w", err)
		}
		r.Repaired = append(r.Repaired, fmt.Sprintf("kept data file %s, which no record names, as %s", e.Name(), filepath.Join(lost, e.Name())))
	}
	return nil
}

// writeSalvage writes sv as a new database at p.
func writeSalvage(p string, sv *salvage) error {
	db, err := bolt.Open(p, 0o600, &bolt.Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		bs := map[string]*bolt.Bucket{}
		for _, name := range [][]byte{bucketEntries, bucketInodes, bucketMeta, bucketLog, bucketCommits} {
			b, err := tx.CreateBucketIfNotExists(name)
			if err != nil {
				return err
			}
			bs[string(name)] = b
		}
		for k, v := range sv.entries {
			if err := bs[string(bucketEntries)].Put(entryKey(k), v); err != nil {
				return err
			}
		}
		for ino, v := range sv.inodes {
			if err := bs[string(bucketInodes)].Put(inoKey(ino), v); err != nil {
				return err
			}
		}
		cb := bs[string(bucketCommits)]
		var top uint64
		for id, v := range sv.commits {
			top = max(top, id)
			if err := cb.Put(inoKey(id), v); err != nil {
				return err
			}
		}
		if err := cb.SetSequence(top); err != nil {
			return err
		}
		for i, l := range sv.log {
			if err := bs[string(bucketLog)].Put(inoKey(uint64(i+1)), l); err != nil {
				return err
			}
		}
		if err := bs[string(bucketLog)].SetSequence(uint64(len(sv.log))); err != nil {
			return err
		}
		meta := bs[string(bucketMeta)]
		for k, v := range map[string][]byte{string(keyFormat): formatVersion, string(keyNextIno): inoKey(sv.nextIno), string(keyWalApplied): inoKey(sv.maxSeq)} {
			if err := meta.Put([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = db.Sync()
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}
