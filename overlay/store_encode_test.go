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
// by reflection, field by field, so a field added to entry, base, inode
// or LogEntry and not to its encoder fails here.
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
	for range 3000 {
		var n inode
		randomFill(r, reflect.ValueOf(&n).Elem())
		check("inode", encodeInode(&n), &n)
		var e entry
		randomFill(r, reflect.ValueOf(&e).Elem())
		check("entry", encodeEntry(&e), &e)
		var l LogEntry
		randomFill(r, reflect.ValueOf(&l).Elem())
		enc, err := encodeLog(&l)
		if err != nil {
			t.Fatal(err)
		}
		check("log entry", enc, &l)

		rec := &walRecord{Seq: r.Uint64N(1 << 40), NextIno: r.Uint64()}
		if r.IntN(3) > 0 {
			rec.Entries = map[string]json.RawMessage{}
			for range 1 + r.IntN(3) {
				rec.Entries[randomString(r)] = nil
				if r.IntN(3) > 0 {
					rec.Entries[randomString(r)] = encodeEntry(&e)
				}
			}
		}
		if r.IntN(3) > 0 {
			rec.Inodes = map[uint64]json.RawMessage{r.Uint64(): encodeInode(&n), r.Uint64N(100): nil, r.Uint64N(20): encodeInode(&n)}
		}
		if r.IntN(2) > 0 {
			rec.Log = []json.RawMessage{enc, enc}
		}
		if r.IntN(4) == 0 {
			rec.Commits = map[uint64]json.RawMessage{r.Uint64N(30): json.RawMessage(`{"id":1}`), 12: nil}
		}
		check("record", appendRecord(nil, rec), rec)
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
// at its size (a commit's record of 10,000 files is megabytes).
func TestRecordSizeHint(t *testing.T) {
	rec := &walRecord{Seq: 1 << 40, NextIno: 1<<63 + 5, Entries: map[string]json.RawMessage{}, Inodes: map[uint64]json.RawMessage{}}
	for i := range 1000 {
		p := fmt.Sprintf("dir%03d/file%03d.txt", i/10, i)
		rec.Entries[p] = encodeEntry(&entry{Kind: kindFile, Ino: 1<<63 + uint64(i), Base: &base{Path: p, Exists: true, Hash: strings.Repeat("ab", 32)}})
		rec.Inodes[1<<63+uint64(i)] = encodeInode(&inode{Mode: 0o644, Data: true, Uid: 1000, Gid: 1000})
		if i%3 == 0 {
			rec.Entries[p+".gone"] = nil
			rec.Inodes[uint64(i)] = nil
		}
	}
	l, err := encodeLog(&LogEntry{Op: "commit", Paths: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	rec.Log = append(rec.Log, l)
	rec.Commits = map[uint64]json.RawMessage{7: json.RawMessage(`{"state":"done"}`), 8: nil}
	if got, hint := len(appendRecord(nil, rec)), rec.sizeHint(); got > hint {
		t.Errorf("record of %d bytes, size hint %d", got, hint)
	}
}
