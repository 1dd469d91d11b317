//go:build linux

package overlay

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// TestEncodersMatchJSON: the hand-written encoders of the write-ahead
// log give json.Marshal's bytes, for values with every field set or
// zero and strings json escapes (quotes, HTML characters, control
// characters, non-ASCII, invalid UTF-8, U+2028).
func TestEncodersMatchJSON(t *testing.T) {
	strs := []string{"", "a", "src/main.go", `q"uote`, `back\slash`, "<a&b>", "a<b", "a>b", "tab\tnl\n", "\x00\x1f\x7f",
		"héllo", "日本", "\xff\xfe", "line\u2028sep", "emoji 🙂", "a b/c d"}
	r := rand.New(rand.NewPCG(1, 2))
	str := func() string { return strs[r.IntN(len(strs))] }
	num := func() int64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return -r.Int64N(1 << 40)
		case 2:
			return math.MaxInt64
		}
		return r.Int64N(1 << 62)
	}
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
	for range 2000 {
		n := &inode{Mode: fs.FileMode(r.Uint32()), Data: r.IntN(2) == 0, Target: str(), Mtime: num(), Atime: num(), Ctime: num(),
			Rdev: uint64(num()), Uid: int(num()), Gid: int(num()), Born: num()}
		if r.IntN(2) == 0 {
			n.Xattr = map[string][]byte{}
			for range r.IntN(4) {
				var v []byte
				if r.IntN(5) > 0 {
					v = []byte(str())
				}
				n.Xattr["user."+str()] = v
			}
		}
		got := encodeInode(n)
		check("inode", got, n)

		e := &entry{Kind: kind(r.IntN(6)), Ino: uint64(num()), Opaque: r.IntN(2) == 0, Ctime: num(), Origin: str()}
		if r.IntN(2) == 0 {
			e.Base = &base{Path: str(), NoLower: r.IntN(2) == 0, Exists: r.IntN(2) == 0, Kind: kind(r.IntN(6)),
				Mode: fs.FileMode(r.Uint32()), Hash: str(), Size: num(), Mtime: num(), Rdev: uint64(num()),
				Version: num(), Kept: r.IntN(2) == 0}
		}
		check("entry", encodeEntry(e), e)

		l := &LogEntry{Time: time.Unix(0, num()/4).In(time.FixedZone("x", 3600*(r.IntN(25)-12))), Op: str(), Path: str(),
			From: str(), Source: Source(str()), By: str()}
		for range r.IntN(3) {
			l.Paths = append(l.Paths, str())
		}
		enc, err := encodeLog(l)
		if err != nil {
			t.Fatal(err)
		}
		check("log entry", enc, l)

		rec := &walRecord{Seq: uint64(num()), NextIno: uint64(num())}
		if r.IntN(3) > 0 {
			rec.Entries = map[string]json.RawMessage{}
			for range 1 + r.IntN(3) {
				rec.Entries[str()] = nil
				if r.IntN(3) > 0 {
					rec.Entries[str()] = encodeEntry(e)
				}
			}
		}
		if r.IntN(3) > 0 {
			rec.Inodes = map[uint64]json.RawMessage{uint64(num()): got, uint64(r.IntN(100)): nil, uint64(r.IntN(20)): got}
		}
		if r.IntN(2) > 0 {
			rec.Log = []json.RawMessage{enc, enc}
		}
		if r.IntN(4) == 0 {
			rec.Commits = map[uint64]json.RawMessage{uint64(r.IntN(30)): json.RawMessage(`{"id":1}`), 12: nil}
		}
		check("record", appendRecord(nil, rec), rec)
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
