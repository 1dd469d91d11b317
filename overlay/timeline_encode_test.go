//go:build linux

package overlay

import (
	"encoding/json"
	"maps"
	"math/rand"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
)

// TestStateEncoder encodes a state changed at random many times over:
// each encoding is json.Marshal's, byte for byte (keys json escapes or
// orders oddly included: a prefix of another, a space, <, &, invalid
// UTF-8).
func TestStateEncoder(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	names := []string{"a", "a b", "ab", "a/b", "a<b", "a&b", "\xff", "é", "z", "10", "9", "a\u2028"}
	var enc stateEncoder
	st := &cpState{Entries: map[string]*entry{}, Inodes: map[uint64]*inode{}, Data: map[uint64]*cpData{}}
	for i := range 500 {
		next := &cpState{Entries: maps.Clone(st.Entries), Inodes: maps.Clone(st.Inodes), Data: maps.Clone(st.Data), NextIno: uint64(i)}
		for range 1 + r.Intn(4) {
			k := names[r.Intn(len(names))] + names[r.Intn(len(names))]
			ino := uint64(r.Intn(30))
			switch r.Intn(4) {
			case 0:
				delete(next.Entries, k)
				delete(next.Inodes, ino)
				delete(next.Data, ino)
			default:
				next.Entries[k] = &entry{Kind: kindFile, Ino: ino}
				next.Inodes[ino] = &inode{Mode: 0o644, Data: true, Mtime: int64(i)}
				next.Data[ino] = &cpData{Hash: k, Size: int64(i)}
			}
		}
		if r.Intn(3) == 0 {
			next.Blobs = map[string][]string{k(i): {"c"}}
		}
		st = next
		got, err := enc.encode(st)
		must(t, err)
		want, err := json.Marshal(st)
		must(t, err)
		if string(got) != string(want) {
			t.Fatalf("step %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func k(i int) string { return string(rune('a' + i%26)) }

// TestStateEncoderYields: encoding a large state lets another goroutine
// run before it ends, on one P (the daemon's): a request that comes
// while a checkpoint encodes a large draft does not wait for all of it.
// (Under -race the scheduler's own shuffling may run it too; the check
// bites without.)
func TestStateEncoderYields(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	st := &cpState{Entries: map[string]*entry{}, Inodes: map[uint64]*inode{}}
	for i := range 3 * yieldEvery {
		st.Entries[strconv.Itoa(i)] = &entry{Kind: kindFile, Ino: uint64(i)}
		st.Inodes[uint64(i)] = &inode{Mode: 0o644}
	}
	var enc stateEncoder
	_, err := enc.encode(st) // every record encoded: the next only copies
	must(t, err)
	var encoding, ranDuring atomic.Bool
	encoding.Store(true)
	done := make(chan struct{})
	go func() {
		ranDuring.Store(encoding.Load())
		close(done)
	}()
	_, err = enc.encode(st)
	encoding.Store(false)
	must(t, err)
	<-done
	if !ranDuring.Load() {
		t.Error("a goroutine made runnable before an encoding of 3,072 records ran only after it")
	}
}
