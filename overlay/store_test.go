//go:build linux

package overlay

import (
	"fmt"
	"os"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// crash drops s as a killed process would: no checkpoint, no cleanup.
func crash(t *testing.T, s *store) {
	t.Helper()
	if err := s.wal.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeInodes records inodes first..last-1, each with a log entry.
func writeInodes(t *testing.T, s *store, first, last uint64) {
	t.Helper()
	for ino := first; ino < last; ino++ {
		tx := &txn{nextIno: ino + 1}
		tx.putInode(ino, &inode{Mode: 0o644, Data: true})
		tx.addLog(LogEntry{Op: "create", Path: "f"})
		if err := s.write(tx); err != nil {
			t.Fatal(err)
		}
	}
}

// reopen opens the store in dir and checks it holds exactly inodes
// 1..n and n log entries, and an empty write-ahead log.
func reopen(t *testing.T, dir string, n uint64) *store {
	t.Helper()
	s, err := openStore(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := s.load()
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(snap.inodes)) != n || snap.nextIno != n+1 && n > 0 {
		t.Fatalf("reopened: %d inodes, next %d; want %d, next %d", len(snap.inodes), snap.nextIno, n, n+1)
	}
	for ino := uint64(1); ino <= n; ino++ {
		if snap.inodes[ino] == nil {
			t.Fatalf("inode %d lost", ino)
		}
	}
	log, err := s.readLog()
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(log)) != n {
		t.Fatalf("reopened: %d log entries, want %d", len(log), n)
	}
	if fi, err := os.Stat(s.walPath); err != nil || fi.Size() != 0 {
		t.Fatalf("write-ahead log not emptied after recovery: %v, %v", fi, err)
	}
	return s
}

func TestStoreRecoversAfterCrash(t *testing.T) {
	dir := t.TempDir()
	s, err := openStore(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	writeInodes(t, s, 1, 101)
	crash(t, s)
	s = reopen(t, dir, 100)
	writeInodes(t, s, 101, 201)
	crash(t, s)
	s = reopen(t, dir, 200)
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
}

// A record cut short (a write a crash interrupted, so never
// acknowledged) is dropped with whatever follows it; records before it
// are kept, and the log is usable again afterwards.
func TestStoreDropsTornRecord(t *testing.T) {
	for name, tail := range map[string][]byte{
		"short header": {9, 0, 0},
		"short body":   {100, 0, 0, 0, 1, 2, 3, 4, '{', '"'},
		"bad checksum": {2, 0, 0, 0, 1, 2, 3, 4, '{', '}'},
	} {
		for _, alone := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, alone %v", name, alone), func(t *testing.T) {
				dir := t.TempDir()
				s, err := openStore(dir, false)
				if err != nil {
					t.Fatal(err)
				}
				writeInodes(t, s, 1, 11)
				if alone { // the log holds nothing else
					if err := s.checkpoint(); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := s.wal.Write(tail); err != nil {
					t.Fatal(err)
				}
				crash(t, s)
				s = reopen(t, dir, 10)
				writeInodes(t, s, 11, 21)
				crash(t, s)
				reopen(t, dir, 20).close()
			})
		}
	}
}

// A crash after a checkpoint reached the database but before the log
// was emptied replays nothing twice (log entries are appended, so a
// second replay would show).
func TestStoreCheckpointCutShort(t *testing.T) {
	dir := t.TempDir()
	s, err := openStore(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	writeInodes(t, s, 1, 51)
	logged, err := os.ReadFile(s.walPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.checkpoint(); err != nil {
		t.Fatal(err)
	}
	crash(t, s)
	if err := os.WriteFile(s.walPath, logged, 0o600); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, dir, 50)
	writeInodes(t, s, 51, 61)
	crash(t, s)
	reopen(t, dir, 60).close()
}

// The log is checkpointed at once when it holds checkpointRecordsMax
// records, so it stays small however many changes a draft sees without
// a pause; at checkpointRecords it waits for one.
func TestStoreCheckpointsAsItGoes(t *testing.T) {
	defer func(d time.Duration) { checkpointIdle = d }(checkpointIdle)
	checkpointIdle = time.Hour // no pause here
	dir := t.TempDir()
	s, err := openStore(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	writeInodes(t, s, 1, checkpointRecords+11)
	s.checkpointWhenIdle() // as the timer does: changes came within checkpointIdle
	if n := logRecords(s); n != checkpointRecords+10 {
		t.Fatalf("%d records in the log after %d changes without a pause, want them all", n, checkpointRecords+10)
	}
	writeInodes(t, s, checkpointRecords+11, checkpointRecordsMax+11)
	if n := logRecords(s); n != 10 {
		t.Fatalf("%d records in the log after %d changes, want 10", n, checkpointRecordsMax+10)
	}
	fi, err := os.Stat(s.walPath)
	if err != nil || fi.Size() != s.size || s.size == 0 {
		t.Fatalf("log is %v bytes (%v), want %d", fi.Size(), err, s.size)
	}
	crash(t, s)
	reopen(t, dir, checkpointRecordsMax+10).close()
}

// A log holding checkpointRecords records is checkpointed once the
// changes pause for checkpointIdle; one holding fewer is not.
func TestStoreCheckpointsWhenIdle(t *testing.T) {
	defer func(d time.Duration) { checkpointIdle = d }(checkpointIdle)
	checkpointIdle = 20 * time.Millisecond
	dir := t.TempDir()
	s, err := openStore(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	writeInodes(t, s, 1, checkpointRecords+1)
	for start := time.Now(); logRecords(s) != 0; time.Sleep(5 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%d records still in the log 10 s after the last change", logRecords(s))
		}
	}
	writeInodes(t, s, checkpointRecords+1, checkpointRecords+11)
	time.Sleep(10 * checkpointIdle)
	if n := logRecords(s); n != 10 {
		t.Fatalf("%d records in the log, want the 10 written since the checkpoint", n)
	}
	crash(t, s)
	reopen(t, dir, checkpointRecords+10).close()
}

// The database stays where it was mapped while checkpoints grow it to
// megabytes: bbolt does not map it again (each time copying what the
// checkpoint touched into the heap).
func TestStoreMappedOnce(t *testing.T) {
	dir := t.TempDir()
	s, err := openStore(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	mapped := s.db.Info().Data
	for first := uint64(1); first < 40_001; first += 10_000 {
		writeInodes(t, s, first, first+10_000)
		if err := s.checkpoint(); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < 4<<20 {
		t.Fatalf("database of %d bytes after 40,000 inodes: too small to have needed a new mapping", fi.Size())
	}
	if got := s.db.Info().Data; got != mapped {
		t.Errorf("database mapped again as it grew to %d bytes", fi.Size())
	}
}

// logRecords is how many records s's log holds.
func logRecords(s *store) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records
}

// A draft made before the write-ahead log existed (format 1) opens and
// is upgraded.
func TestStoreUpgradesFormat1(t *testing.T) {
	dir := t.TempDir()
	s, err := openStore(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	writeInodes(t, s, 1, 4)
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(s.walPath); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(s.path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if err := meta.Delete(keyWalApplied); err != nil {
			return err
		}
		return meta.Put(keyFormat, []byte("1"))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	s = reopen(t, dir, 3)
	err = s.db.View(func(tx *bolt.Tx) error {
		if f := tx.Bucket(bucketMeta).Get(keyFormat); string(f) != string(formatVersion) {
			t.Errorf("format %q after opening, want %q", f, formatVersion)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.close()
}

// A commit id the database's sequence lost (it is taken without a sync)
// but the log kept is not handed out again.
func TestStoreCommitIDsNotReused(t *testing.T) {
	dir := t.TempDir()
	s, err := openStore(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.nextCommitID()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.write(&txn{commits: map[uint64]*commitRecord{id + 5: {}}}); err != nil {
		t.Fatal(err)
	}
	crash(t, s)
	s, err = openStore(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	next, err := s.nextCommitID()
	if err != nil {
		t.Fatal(err)
	}
	if next <= id+5 {
		t.Fatalf("next commit id %d, but %d is taken", next, id+5)
	}
}
