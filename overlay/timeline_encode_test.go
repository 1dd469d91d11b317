//go:build linux

package overlay

import (
	"encoding/json"
	"maps"
	"math/rand"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
)

// TestStateEncoder encodes a state changed at random many times over:
// each encoding is json.Marshal's, byte for byte (keys json escapes or
// orders oddly included: a prefix of another, a space, <, &, invalid
// UTF-8), and its chunks are cut as an encoder new to the state cuts
// them, with their bytes' hashes.
func TestStateEncoder(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	names := []string{"a", "a b", "ab", "a/b", "a<b", "a&b", "\xff", "é", "z", "10", "9", "a\u2028"}
	var enc stateEncoder
	chunks := map[string][]byte{} // all enc kept
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
		got, hashes, err := enc.encode(st, keepIn(chunks))
		must(t, err)
		want, err := json.Marshal(st)
		must(t, err)
		if string(got) != string(want) {
			t.Fatalf("step %d:\n got %s\nwant %s", i, got, want)
		}
		var fresh stateEncoder
		_, wantHashes, err := fresh.encode(st, keepIn(map[string][]byte{}))
		must(t, err)
		if !slices.Equal(hashes, wantHashes) {
			t.Fatalf("step %d: chunks %q, a new encoder's %q", i, hashes, wantHashes)
		}
		var joined []byte
		for _, h := range hashes {
			joined = append(joined, chunks[h]...)
		}
		if string(joined) != string(want) {
			t.Fatalf("step %d: the chunks join to %s", i, joined)
		}
	}
}

// keepIn is a putFunc keeping chunks in m.
func keepIn(m map[string][]byte) putFunc {
	return func(b []byte) (string, error) {
		h := hashBytes(b)
		m[h] = slices.Clone(b)
		return h, nil
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
	put := keepIn(map[string][]byte{})
	_, _, err := enc.encode(st, put) // every record encoded: the next only copies
	must(t, err)
	var encoding, ranDuring atomic.Bool
	encoding.Store(true)
	done := make(chan struct{})
	go func() {
		ranDuring.Store(encoding.Load())
		close(done)
	}()
	_, _, err = enc.encode(st, put)
	encoding.Store(false)
	must(t, err)
	<-done
	if !ranDuring.Load() {
		t.Error("a goroutine made runnable before an encoding of 3,072 records ran only after it")
	}
}

// TestStateEncoderReusesGroups: after a change of a few records in a
// large state, the encoder keeps the chunks of the groups that hold them
// (and the small ones between the maps), not the whole state's, and
// cuts it as an encoder new to it does.
func TestStateEncoderReusesGroups(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	st := &cpState{Entries: map[string]*entry{}, Inodes: map[uint64]*inode{}, Data: map[uint64]*cpData{}}
	for i := range 20000 {
		st.Entries["d/f"+strconv.Itoa(i)] = &entry{Kind: kindFile, Ino: uint64(i)}
		st.Inodes[uint64(i)] = &inode{Mode: 0o644, Data: true}
		st.Data[uint64(i)] = &cpData{Hash: strconv.Itoa(i), Size: int64(i)}
	}
	var enc stateEncoder
	chunks := map[string][]byte{}
	puts := 0
	put := func(b []byte) (string, error) {
		puts++
		return keepIn(chunks)(b)
	}
	_, first, err := enc.encode(st, put)
	must(t, err)
	if len(first) < 3*20000/groupRecords/2 {
		t.Fatalf("20,000 records of each map cut into %d chunks", len(first))
	}
	for step := range 20 {
		next := &cpState{Entries: maps.Clone(st.Entries), Inodes: maps.Clone(st.Inodes), Data: maps.Clone(st.Data), NextIno: uint64(step)}
		i := r.Intn(20000)
		switch step % 3 {
		case 0: // a file changed
			next.Data[uint64(i)] = &cpData{Hash: "changed", Size: int64(step)}
		case 1: // a file gone
			delete(next.Entries, "d/f"+strconv.Itoa(i))
			delete(next.Inodes, uint64(i))
			delete(next.Data, uint64(i))
		case 2: // a file made
			ino := uint64(30000 + step)
			next.Entries["d/new"+strconv.Itoa(step)] = &entry{Kind: kindFile, Ino: ino}
			next.Inodes[ino] = &inode{Mode: 0o600, Data: true}
		}
		st = next
		puts = 0
		b, hashes, err := enc.encode(st, put)
		must(t, err)
		want, err := json.Marshal(st)
		must(t, err)
		if string(b) != string(want) {
			t.Fatalf("step %d: the encoding is not json.Marshal's", step)
		}
		if puts > 8 {
			t.Errorf("step %d: a change of one file kept %d chunks of %d", step, puts, len(hashes))
		}
		var fresh stateEncoder
		_, wantHashes, err := fresh.encode(st, keepIn(map[string][]byte{}))
		must(t, err)
		if !slices.Equal(hashes, wantHashes) {
			t.Fatalf("step %d: cut otherwise than a new encoder cuts", step)
		}
		var joined []byte
		for _, h := range hashes {
			joined = append(joined, chunks[h]...)
		}
		if string(joined) != string(want) {
			t.Fatalf("step %d: the chunks do not join to the encoding", step)
		}
	}
	// A failed checkpoint's chunks may not have been kept: after forget,
	// every chunk is kept again.
	enc.forget()
	puts = 0
	_, hashes, err := enc.encode(st, put)
	must(t, err)
	if puts != len(hashes) {
		t.Errorf("after forget, %d of %d chunks kept", puts, len(hashes))
	}
}
