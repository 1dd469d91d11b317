//go:build linux

package overlay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// CheckReport is what [CheckDraft] found in a draft's state, and what a
// repair did.
type CheckReport struct {
	Draft string `json:"draft"`
	Dir   string `json:"dir"`
	// Counts of what could be read: database records and log records
	// not checkpointed yet.
	Entries    int   `json:"entries"`
	Inodes     int   `json:"inodes"`
	Commits    int   `json:"commits"`
	LogRecords int   `json:"walRecords"`
	TornBytes  int   `json:"tornBytes,omitempty"` // a torn tail, dropped at the next start
	Size       int64 `json:"size"`                // bytes the state takes on disk
	// Problems: damage, each with the file, the offset when known and
	// what can be recovered. Empty: the state is sound.
	Problems []CheckProblem `json:"problems"`
	// Repaired: what a repair did, file by file.
	Repaired []string `json:"repaired,omitempty"`
}

// CheckProblem is one thing wrong in a draft's state.
type CheckProblem struct {
	File    string `json:"file"`
	Offset  int64  `json:"offset"` // -1: not about one place
	What    string `json:"what"`
	Recover string `json:"recover"`
}

func (r *CheckReport) problem(file string, off int64, what, recover string, args ...any) {
	r.Problems = append(r.Problems, CheckProblem{File: file, Offset: off, What: what, Recover: fmt.Sprintf(recover, args...)})
}

// salvage is what could be read of a draft's records.
type salvage struct {
	entries map[string][]byte
	inodes  map[uint64][]byte
	nextIno uint64
	log     [][]byte
	commits map[uint64][]byte
	maxSeq  uint64
}

// CheckDraft verifies the state of draft name under stateDir offline
// (no process may have it open): the database page by page, every record
// of the database and of the write-ahead log, and that records and data
// files agree. With repair, damaged files are kept aside (renamed with a
// .damaged suffix), a new database is built from every record that
// could be read, and data files no record names are kept in lost+found/
// instead of being collected.
func CheckDraft(stateDir, name string, repair bool) (*CheckReport, error) {
	if name == "" {
		name = DefaultDraft
	}
	dir := filepath.Join(stateDir, "drafts", name)
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("overlay: draft %s: %w", name, err)
	}
	r := &CheckReport{Draft: name, Dir: dir, Problems: []CheckProblem{}}
	// A shared hold of the database's own lock, as bbolt takes: no
	// process can have the draft open for writing meanwhile.
	if f, err := os.Open(filepath.Join(dir, "draft.db")); err == nil {
		defer f.Close()
		if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
			return nil, fmt.Errorf("overlay: draft %s is in use by another draftfs process: stop it first", name)
		}
	}
	sv := &salvage{entries: map[string][]byte{}, inodes: map[uint64][]byte{}, commits: map[uint64][]byte{}, nextIno: firstDraftIno}
	dbPath, walPath := filepath.Join(dir, "draft.db"), filepath.Join(dir, "draft.wal")
	dbBad, applied, err := checkDB(r, sv, dbPath, walPath)
	if err != nil {
		return nil, err
	}
	walBad := checkWAL(r, sv, walPath, applied)
	checkData(r, sv, dir)
	r.Size = dirSize(dir)
	if !repair || !dbBad && !walBad {
		return r, nil
	}
	return r, repairDraft(r, sv, dir, dbBad)
}

// checkDB reads what it can of the database into sv; bad reports damage.
func checkDB(r *CheckReport, sv *salvage, dbPath, walPath string) (bad bool, applied uint64, err error) {
	if _, err := os.Lstat(dbPath); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Lstat(walPath); err == nil {
			r.problem(dbPath, -1, "missing, while draft.wal is there: the records it held up to the last checkpoint are lost",
				"--repair builds a new database from draft.wal's records; data files no record names are kept in lost+found/")
			return true, 0, nil
		}
		return false, 0, nil
	}
	var db *bolt.DB
	err = safe(func() (err error) {
		db, err = bolt.Open(dbPath, 0o600, &bolt.Options{ReadOnly: true, Timeout: 200 * time.Millisecond})
		return err
	})
	if err != nil {
		r.problem(dbPath, -1, fmt.Sprintf("cannot be opened: %v", err),
			"--repair keeps it aside as draft.db.damaged-* and builds a new database from draft.wal's records")
		return true, 0, nil
	}
	defer db.Close()
	// Not tx.Check: it rebuilds the free list in a goroutine where a
	// damaged page panics beyond recovery (see walkDB). Reading every
	// record below visits every page.
	read := func(bucket []byte, fn func(k, v []byte) error) {
		err := safe(func() error {
			return db.View(func(tx *bolt.Tx) error { return forEach(tx, bucket, fn) })
		})
		if err != nil {
			if !bad {
				r.problem(dbPath, -1, fmt.Sprintf("bucket %s: %v", bucket, err),
					"--repair keeps it aside as draft.db.damaged-* and builds a new database from every record that can still be read")
			}
			bad = true
		}
	}
	read(bucketEntries, func(k, v []byte) error {
		if _, err := decodeEntry(k, v); err != nil {
			return err
		}
		sv.entries[keyOfEntry(k)] = slices.Clone(v)
		r.Entries++
		return nil
	})
	read(bucketInodes, func(k, v []byte) error {
		if _, err := decodeInode(k, v); err != nil {
			return err
		}
		sv.inodes[binary.BigEndian.Uint64(k)] = slices.Clone(v)
		r.Inodes++
		return nil
	})
	read(bucketLog, func(k, v []byte) error {
		sv.log = append(sv.log, slices.Clone(v))
		return nil
	})
	read(bucketCommits, func(k, v []byte) error {
		if len(k) == 8 {
			sv.commits[binary.BigEndian.Uint64(k)] = slices.Clone(v)
			r.Commits++
		}
		return nil
	})
	read(bucketMeta, func(k, v []byte) error {
		switch {
		case string(k) == string(keyNextIno) && len(v) == 8:
			sv.nextIno = binary.BigEndian.Uint64(v)
		case string(k) == string(keyWalApplied) && len(v) == 8:
			applied = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	sv.maxSeq = applied
	return bad, applied, nil
}

// checkWAL reads every whole record of the log into sv, also those
// after a damaged one; bad reports damage.
func checkWAL(r *CheckReport, sv *salvage, walPath string, applied uint64) (bad bool) {
	buf, err := os.ReadFile(walPath)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			r.problem(walPath, -1, fmt.Sprintf("cannot be read: %v", err), "")
			return true
		}
		return false
	}
	for off := 0; off < len(buf); {
		scan := scanWAL(buf[off:], applied)
		for _, rec := range scan.records {
			sv.add(rec)
			r.LogRecords++
		}
		if scan.damage == nil {
			r.TornBytes = len(buf) - off - scan.whole
			return bad
		}
		bad = true
		d := scan.damage
		r.problem(walPath, int64(off+d.offset), fmt.Sprintf("damaged record, with %d whole record(s) after it", d.after),
			"--repair keeps the file aside as draft.wal.damaged-* and replays the %d record(s) that can be read; "+
				"the change the damaged record held is lost, and data files of it no record names are kept in lost+found/", r.LogRecords+d.after)
		applied = max(applied, sv.maxSeq)
		off += d.afterOffset
	}
	return bad
}

func (sv *salvage) add(rec *walRecord) {
	for k, v := range rec.Entries {
		if v = value(v); v == nil {
			delete(sv.entries, k)
		} else {
			sv.entries[k] = v
		}
	}
	for k, v := range rec.Inodes {
		if v = value(v); v == nil {
			delete(sv.inodes, k)
		} else {
			sv.inodes[k] = v
		}
	}
	for k, v := range rec.Commits {
		if v = value(v); v == nil {
			delete(sv.commits, k)
		} else {
			sv.commits[k] = v
		}
	}
	if rec.NextIno != 0 {
		sv.nextIno = rec.NextIno
	}
	for _, l := range rec.Log {
		sv.log = append(sv.log, l)
	}
	sv.maxSeq = max(sv.maxSeq, rec.Seq)
}

// stray reports whether the data file e is one no record names (owned
// has the names records give) and not an empty spare.
func stray(e fs.DirEntry, owned map[string]bool) bool {
	if owned[e.Name()] {
		return false
	}
	if _, numbered := parseFileName(e.Name()); numbered {
		fi, err := e.Info()
		return err == nil && fi.Size() > 0
	}
	return true
}

// checkData compares records and data files: entries naming no inode,
// inodes whose content is missing, data files no inode owns.
func checkData(r *CheckReport, sv *salvage, dir string) {
	for k, v := range sv.entries {
		e, err := decodeEntry([]byte(k), v)
		if err == nil && e.Ino != 0 && sv.inodes[e.Ino] == nil {
			r.problem(filepath.Join(dir, "draft.db"), -1, fmt.Sprintf("entry %q names inode %x, which no record holds", k, e.Ino),
				"--repair drops the entry (the path shows what is on disk again)")
		}
	}
	owned := map[string]bool{}
	for ino, v := range sv.inodes {
		n, err := decodeInode(inoKey(ino), v)
		if err != nil || !n.Data {
			continue
		}
		owned[n.dataName(ino)] = true
		if _, err := os.Lstat(filepath.Join(dir, "data", n.dataName(ino))); err != nil {
			r.problem(filepath.Join(dir, "data", n.dataName(ino)), -1, "missing: the content of a draft file is lost", "")
		}
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "data"))
	for _, e := range ents {
		if !stray(e, owned) {
			continue
		}
		r.problem(filepath.Join(dir, "data", e.Name()), -1, "a data file no record names (the next start collects it)",
			"when records were lost, --repair keeps it in lost+found/ to copy back by hand")
	}
	for id, v := range sv.commits {
		var c commitRecord
		if decodeJSON(v, &c) == nil && (c.State == stateStaging || c.State == statePlacing) {
			r.problem(filepath.Join(dir, "draft.db"), -1, fmt.Sprintf("commit %d was interrupted", id),
				"the next draftfs command that changes the draft finishes it")
		}
	}
}
