//go:build linux

package overlay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestEncodersMatchJSON: the hand-written encoders of the write-ahead
// log give json.Marshal's bytes, for values with every field set or
// zero and strings json escapes (quotes, HTML characters, control
// characters, non-ASCII, invalid UTF-8, U+2028). The values are filled
// by reflection, field by field, so a field added to entry, base, inode,
// LogEntry or a commit's record and not to its encoder fails here. A
// record is framed as json.Marshal encodes its walRecord, and what it
// puts in the database is each value as json.Marshal encodes it (nil
// for a delete).
func TestEncodersMatchJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(what string, got []byte, v any) {
		t.Helper()
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
		}
	}
	// puts checks that got puts each value of m, encoded, under its key.
	puts := func(what string, got []put[string], m map[string]any) {
		t.Helper()
		if len(got) != len(m) {
			t.Fatalf("%s: %d puts for %d values", what, len(got), len(m))
		}
		for _, p := range got {
			v, ok := m[p.key]
			switch {
			case !ok:
				t.Fatalf("%s: put of %q, which the record does not change", what, p.key)
			case reflect.ValueOf(v).IsNil():
				if p.v != nil {
					t.Fatalf("%s: delete of %q puts %s", what, p.key, p.v)
				}
			default:
				check(what+" "+p.key, p.v, v)
			}
		}
	}
	byName := func(ps []put[uint64]) []put[string] {
		out := make([]put[string], len(ps))
		for i, p := range ps {
			out[i] = put[string]{strconv.FormatUint(p.key, 10), p.v}
		}
		return out
	}
	// Records are encoded in one scratch buffer, as a store does: what
	// one puts must not change as the next is encoded.
	var scratch []byte
	var last []put[string]
	var lastWant [][]byte
	for range 3000 {
		var n inode
		randomFill(r, reflect.ValueOf(&n).Elem())
		check("inode", appendInode(nil, &n), &n)
		var e entry
		randomFill(r, reflect.ValueOf(&e).Elem())
		check("entry", appendEntry(nil, &e), &e)
		var l LogEntry
		randomFill(r, reflect.ValueOf(&l).Elem())
		enc, err := appendLog(nil, &l)
		if err != nil {
			t.Fatal(err)
		}
		check("log entry", enc, &l)
		var c commitRecord
		randomFill(r, reflect.ValueOf(&c).Elem())
		check("commit", appendCommit(nil, &c), &c)

		tx := &txn{nextIno: r.Uint64()}
		want := &walRecord{Seq: r.Uint64N(1 << 40), NextIno: tx.nextIno}
		entries, inodes, commits := map[string]any{}, map[string]any{}, map[string]any{}
		if r.IntN(3) > 0 {
			want.Entries = map[string]json.RawMessage{}
			for range 1 + r.IntN(3) {
				k := randomString(r)
				tx.putEntry(k, nil)
				want.Entries[k], entries[k] = nil, (*entry)(nil)
				if r.IntN(3) > 0 {
					k := randomString(r)
					tx.putEntry(k, &e)
					want.Entries[k], entries[k] = appendEntry(nil, &e), &e
				}
			}
		}
		if r.IntN(3) > 0 {
			want.Inodes = map[uint64]json.RawMessage{}
			for _, ino := range []uint64{r.Uint64(), r.Uint64N(100), r.Uint64N(20)} {
				v := &n
				if r.IntN(3) == 0 {
					v = nil
				}
				tx.putInode(ino, v)
				want.Inodes[ino], inodes[strconv.FormatUint(ino, 10)] = nil, v
				if v != nil {
					want.Inodes[ino] = appendInode(nil, v)
				}
			}
		}
		if r.IntN(2) > 0 {
			tx.log = []LogEntry{l, l}
			want.Log = []json.RawMessage{enc, enc}
		}
		if r.IntN(4) == 0 {
			c := &commitRecord{State: "done", Paths: []string{randomString(r)}}
			tx.commits = map[uint64]*commitRecord{r.Uint64N(30): c, 12: nil}
			want.Commits = map[uint64]json.RawMessage{}
			for id, c := range tx.commits {
				want.Commits[id], commits[strconv.FormatUint(id, 10)] = nil, c
				if c != nil {
					want.Commits[id], _ = json.Marshal(c)
				}
			}
		}
		frame, p, err := tx.encode(want.Seq, &scratch)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range last {
			if !bytes.Equal(p.v, lastWant[i]) {
				t.Fatalf("the last record's put of %q changed to %s as the next was encoded", p.key, p.v)
			}
		}
		last, lastWant = p.entries, nil
		for _, e := range p.entries {
			lastWant = append(lastWant, bytes.Clone(e.v))
		}
		check("record", frame[walHeader:], want)
		if got, n := frameAt(frame, 0); got == nil || n != len(frame) {
			t.Fatalf("the frame of %s does not read back", frame[walHeader:])
		}
		puts("entries", p.entries, entries)
		puts("inodes", byName(p.inodes), inodes)
		puts("commits", byName(p.commits), commits)
		if p.nextIno != tx.nextIno || len(p.log) != len(want.Log) {
			t.Fatalf("record puts next inode %d and %d log entries, want %d and %d", p.nextIno, len(p.log), tx.nextIno, len(want.Log))
		}
		for _, got := range p.log {
			check("log put", got, &l)
		}
	}
}

var testStrings = []string{"", "a", "src/main.go", `q"uote`, `back\slash`, "<a&b>", "a<b", "a>b", "tab\tnl\n", "\x00\x1f\x7f",
	"héllo", "日本", "\xff\xfe", "line\u2028sep", "emoji 🙂", "a b/c d"}

func randomString(r *rand.Rand) string { return testStrings[r.IntN(len(testStrings))] }

// randomFill sets v, and each field of a struct, to a random value: zero
// one time in four, so that omitempty is exercised too.
func randomFill(r *rand.Rand, v reflect.Value) {
	if r.IntN(4) == 0 && v.Kind() != reflect.Struct {
		v.SetZero()
		return
	}
	if v.Type() == reflect.TypeFor[time.Time]() {
		zone := time.FixedZone("z", 3600*(r.IntN(25)-12))
		v.Set(reflect.ValueOf(time.Unix(r.Int64N(1<<35), r.Int64N(1e9)).In(zone)))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			randomFill(r, v.Field(i))
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		randomFill(r, v.Elem())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(r.Int64() - r.Int64())
	case reflect.Uint8:
		v.SetUint(r.Uint64N(256))
	case reflect.Uint32, reflect.Uint64:
		v.SetUint(r.Uint64() >> (64 - v.Type().Bits()))
	case reflect.String:
		v.SetString(randomString(r))
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1+r.IntN(3), 3)
		for i := range s.Len() {
			randomFill(r, s.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 1 + r.IntN(3) {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			randomFill(r, k)
			randomFill(r, e)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	default:
		panic("randomFill: no case for " + v.Type().String())
	}
}

// BenchmarkStoreWrite writes what creating a file logs (its entry and
// inode, the parent's inode, the next inode number and a log entry) to
// the write-ahead log, checkpoints included.
func BenchmarkStoreWrite(b *testing.B) {
	s, err := openStore(b.TempDir(), false)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	now := time.Now().UnixNano()
	dir := &inode{Mode: fs.ModeDir | 0o755, Mtime: now, Atime: now, Ctime: now}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		ino := firstDraftIno + 2 + uint64(i)
		key := "small/d" + strconv.Itoa(i/100) + "/f" + strconv.Itoa(i%100) + ".txt"
		t := &txn{nextIno: ino + 1}
		t.putEntry(key, &entry{Kind: kindFile, Ino: ino, Base: &base{Path: key, NoLower: true}})
		t.putInode(ino, &inode{Mode: 0o644, Data: true, Mtime: now, Atime: now, Ctime: now})
		t.putInode(firstDraftIno+1, dir)
		t.addLog(LogEntry{Op: "create", Path: key, Source: SourceMount})
		if err := s.write(t); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRecordSizeHint: the buffer a record is encoded into is made once
// at its size (a commit's record of 10,000 files is megabytes), for
// values with every field set, a commit's record too.
func TestRecordSizeHint(t *testing.T) {
	tx := &txn{nextIno: 1<<63 + 5}
	for i := range 1000 {
		p := fmt.Sprintf("dir%03d/file%03d.txt", i/10, i)
		tx.putEntry(p, &entry{Kind: kindFile, Ino: 1<<63 + uint64(i), Ctime: -1 << 62, Origin: p,
			Base: &base{Path: p, Exists: true, Kind: kindFile, Mode: 0o644, Hash: strings.Repeat("ab", 32), Size: 1 << 40, Mtime: -1 << 62, Rdev: 1 << 60, Version: 1 << 60}})
		tx.putInode(1<<63+uint64(i), &inode{Mode: 0o644 | fs.ModeSetuid, Data: true, Mtime: -1 << 62, Atime: -1 << 62, Ctime: -1 << 62,
			Uid: 1 << 31, Gid: 1 << 31, Rdev: 1 << 60, Born: -1 << 62, File: 1 << 60, Xattr: map[string][]byte{"user.a": []byte("value")}})
		if i%3 == 0 {
			tx.putEntry(p+".gone", nil)
			tx.putInode(uint64(i), nil)
		}
	}
	tx.log = []LogEntry{{Time: time.Now(), Op: "commit", Paths: []string{"a", "b"}, Source: "agent:x", By: "someone"}}
	rec := &commitRecord{Time: time.Now().Format(time.RFC3339Nano), State: stateRollingBack, Source: "agent:x", Stage: ".draftfs-commit-1",
		Entry: map[string]*entry{}, Inode: map[uint64]*inode{}, Keep: map[string]*keptPart{}, Upto: 1 << 40, Failure: "full", Stamped: -1 << 62}
	for k, e := range tx.entries {
		rec.Paths = append(rec.Paths, k)
		rec.Entry[k] = e
		if e != nil {
			rec.Inode[e.Ino] = tx.inodes[e.Ino]
			rec.Keep[k] = &keptPart{Rest: strings.Repeat("cd", 32), Hash: strings.Repeat("ab", 32), Mode: 0o644 | fs.ModeSetgid}
		}
		rec.Ops = append(rec.Ops, commitOp{Kind: opWrite, Path: k, From: k, Stage: k, Ino: 1 << 63, Blob: k, Mode: 0o644 | fs.ModeSetuid,
			Target: k, Rdev: 1 << 63, Backup: k, OldMode: fs.ModeDir | 0o755, Hash: strings.Repeat("ab", 32),
			Stat:  &fileStamp{Dev: 1 << 63, Ino: 1 << 63, Size: -1 << 62, Mtime: -1 << 62, Ctime: -1 << 62},
			Xattr: map[string][]byte{"user.a": []byte("value")}, Owner: &Owner{Uid: -1 << 31, Gid: -1 << 31}, Link: true})
	}
	tx.commits = map[uint64]*commitRecord{7: rec, 8: nil}
	hint := tx.sizeHint()
	var scratch []byte
	frame, _, err := tx.encode(1<<40, &scratch)
	if err != nil {
		t.Fatal(err)
	}
	if len(frame) > hint {
		t.Errorf("record of %d bytes, size hint %d", len(frame), hint)
	}
}

// The size hint of a record as a commit of new files writes (sparse
// entries, inodes with their times, ops with a few fields) is close to
// its length, not the worst case of every field: encode clears the
// whole buffer, and keeps a large one as the frame.
func TestRecordSizeHintClose(t *testing.T) {
	now := time.Now().UnixNano()
	tx := &txn{nextIno: 30_000}
	rec := &commitRecord{Time: time.Now().Format(time.RFC3339Nano), State: stateDone, Source: "cli", Stage: ".draftfs-commit-1",
		Entry: map[string]*entry{}, Inode: map[uint64]*inode{}}
	for i := range 2000 {
		p := fmt.Sprintf("new%03d/n%03d.txt", i/100, i%100)
		ino := 1<<63 + uint64(i)
		e := &entry{Kind: kindFile, Ino: ino, Base: &base{NoLower: true}}
		n := &inode{Mode: 0o644, Data: true, Mtime: now, Atime: now, Ctime: now, File: uint64(i)}
		tx.putEntry(p, nil)
		tx.putInode(ino, nil)
		rec.Paths = append(rec.Paths, p)
		rec.Entry[p], rec.Inode[ino] = e, n
		rec.Ops = append(rec.Ops, commitOp{Kind: opWrite, Path: p, Ino: ino, Mode: 0o644, Hash: strings.Repeat("ab", 32),
			Stat: &fileStamp{Dev: 2049, Ino: uint64(i) + 1e6, Size: 24, Mtime: now, Ctime: now}, Link: true})
	}
	tx.commits = map[uint64]*commitRecord{7: rec}
	hint := tx.sizeHint()
	var scratch []byte
	frame, _, err := tx.encode(1<<20, &scratch)
	if err != nil {
		t.Fatal(err)
	}
	if len(frame) > hint || float64(hint) > 1.3*float64(len(frame)) {
		t.Errorf("record of %d bytes, size hint %d (%.2fx): want at least its length, within 1.3x", len(frame), hint, float64(hint)/float64(len(frame)))
	}
}

// BenchmarkEncodeCommit encodes the record of a commit of 10,000 new
// files (scripts/bench-scale's), as a commit writes it twice.
func BenchmarkEncodeCommit(b *testing.B) {
	now := time.Now().UnixNano()
	r := &commitRecord{Time: time.Now().Format(time.RFC3339Nano), State: stateDone, Source: SourceCLI,
		Stage: ".draftfs-commit-1", Entry: map[string]*entry{}, Inode: map[uint64]*inode{}, Stamped: now}
	for i := range 10000 {
		k := fmt.Sprintf("new%03d/n%03d.txt", i/100, i%100)
		ino := firstDraftIno + uint64(i)
		r.Paths = append(r.Paths, k)
		r.Ops = append(r.Ops, commitOp{Kind: opWrite, Path: k, Ino: ino, Mode: 0o644, Hash: strings.Repeat("ab", 32), Link: true,
			Stat: &fileStamp{Dev: 2049, Ino: 1 << 20, Size: 20, Mtime: now, Ctime: now}})
		r.Entry[k] = &entry{Kind: kindFile, Ino: ino, Base: &base{Path: k, NoLower: true}}
		r.Inode[ino] = &inode{Mode: 0o644, Data: true, Mtime: now, Atime: now, Ctime: now, Born: now}
	}
	b.ReportAllocs()
	for b.Loop() {
		t := &txn{commits: map[uint64]*commitRecord{1: r}}
		var scratch []byte
		if _, _, err := t.encode(1, &scratch); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCompareDecimal: numbers order as their decimal strings do, around
// every power of ten and at random.
func TestCompareDecimal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var nums []uint64
	for _, p := range pow10 {
		nums = append(nums, p-1, p, p+1, p*2, p*9)
	}
	nums = append(nums, 0, 1<<64-1, 1<<63, 18446744073709551615/10)
	for range 2000 {
		nums = append(nums, r.Uint64()>>r.UintN(64))
	}
	for _, a := range nums {
		for _, b := range nums {
			want := strings.Compare(strconv.FormatUint(a, 10), strconv.FormatUint(b, 10))
			if got := compareDecimal(a, b); got != want {
				t.Fatalf("compareDecimal(%d, %d) = %d, want %d", a, b, got, want)
			}
		}
	}
}
