//go:build linux

package overlay

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The write-ahead log's records, entries and inodes are encoded by hand:
// every change through the mount writes one record, and encoding/json's
// reflection, its sorting of map keys by reflection and its compacting
// again of values it was given encoded were a sixth of the daemon's CPU
// time per file tar creates. A record is encoded straight from its txn
// into its frame, and the database's values are slices of that frame,
// not maps of values encoded apart first. The bytes are exactly
// json.Marshal's (TestEncodersMatchJSON), so records read back as
// before.

// scratchMax bounds the encoding buffer a store keeps between records.
const scratchMax = 64 << 10

// encode frames t as the write-ahead log's record number seq (see
// walHeader), and returns what the record puts in the database: its
// values are slices of the frame, encoded once, straight from t. It
// encodes into *scratch and returns an exact copy (the frame lives
// until the next checkpoint), or, past scratchMax, into a buffer of its
// own that it returns.
func (t *txn) encode(seq uint64, scratch *[]byte) ([]byte, *recordPuts, error) {
	p := &recordPuts{nextIno: t.nextIno}
	var es, is, cs, ls []span
	b := slices.Grow((*scratch)[:0], t.sizeHint())[:walHeader]
	b = append(b, `{"q":`...)
	b = strconv.AppendUint(b, seq, 10)
	if len(t.entries) > 0 {
		b = append(b, `,"e":`...)
		b, p.entries, es = appendPuts(b, t.entries, strings.Compare, appendString, appendEntry)
	}
	if len(t.inodes) > 0 {
		b = append(b, `,"i":`...)
		b, p.inodes, is = appendPuts(b, t.inodes, compareDecimal, appendDecimal, appendInode)
	}
	if t.nextIno != 0 {
		b = append(b, `,"n":`...)
		b = strconv.AppendUint(b, t.nextIno, 10)
	}
	if len(t.log) > 0 {
		b = append(b, `,"l":[`...)
		for i := range t.log {
			if i > 0 {
				b = append(b, ',')
			}
			start := len(b)
			var err error
			if b, err = appendLog(b, &t.log[i]); err != nil {
				return nil, nil, err
			}
			ls = append(ls, span{start, len(b)})
		}
		b = append(b, ']')
	}
	if len(t.commits) > 0 {
		b = append(b, `,"c":`...)
		b, p.commits, cs = appendPuts(b, t.commits, compareDecimal, appendDecimal, appendCommit)
	}
	b = append(b, '}')
	binary.LittleEndian.PutUint32(b, uint32(len(b)-walHeader))
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(b[walHeader:], crcTable))
	frame := b
	if cap(b) <= scratchMax {
		frame = bytes.Clone(b)
		*scratch = b[:0]
	} else {
		// Made for this record, not kept: the frame itself, not copied
		// again (a commit's record is megabytes).
		*scratch = nil
	}
	fill(p.entries, es, frame)
	fill(p.inodes, is, frame)
	fill(p.commits, cs, frame)
	for _, s := range ls {
		p.log = append(p.log, s.of(frame))
	}
	return frame, p, nil
}

// recordPuts is what a record sets in the database: for each key its
// encoded value, nil for a delete.
type recordPuts struct {
	entries []put[string]
	inodes  []put[uint64]
	commits []put[uint64]
	log     [][]byte
	nextIno uint64
}

type put[K comparable] struct {
	key K
	v   []byte
}

// sizeHint is at least the length of t's record with commits encoded,
// but for strings that need escaping: the buffer encode fills is grown
// once, not as it fills (a commit's record of 10,000 files is
// megabytes, and growing it was a fifth of what a commit allocates),
// and not much past what the record takes (the buffer is cleared in
// full, and a large record's buffer is its frame until the next
// checkpoint). Fields the encoder leaves out count nothing.
func (t *txn) sizeHint() int {
	n := walHeader + 64
	for k, e := range t.entries {
		n += entrySize(k, e)
	}
	for k, v := range t.inodes {
		n += inodeSize(k, v)
	}
	for _, l := range t.log {
		n += 128 + len(l.Path) + len(l.From) + len(l.Source) + len(l.By)
		for _, p := range l.Paths {
			n += len(p) + 3
		}
	}
	for _, v := range t.commits {
		n += 24
		if v != nil {
			n += commitSize(v)
		}
	}
	return n
}

// Upper bounds of one field encoded, with its name and comma: numField
// of a number, strField of a string (as it is when nothing in it is
// escaped); nothing for a zero or empty one, which the encoder omits.
func numField[T ~int | ~int64 | ~uint32 | ~uint64](v T) int {
	switch {
	case v == 0:
		return 0
	case v < 0:
		return 9 + decimalDigits(uint64(-int64(v)))
	}
	return 8 + decimalDigits(uint64(v))
}

func strField(s string) int {
	if s == "" {
		return 0
	}
	return 8 + len(s)
}

// entrySize is at least the length of an entry's key and value encoded.
func entrySize(k string, e *entry) int {
	n := len(k) + 8
	if e == nil {
		return n + 4
	}
	n += 16 + numField(e.Ino) + numField(e.Ctime) + strField(e.Origin)
	if e.Opaque {
		n += 10
	}
	if b := e.Base; b != nil {
		n += 40 + len(b.Path) + numField(uint64(b.Kind)) + numField(b.Mode) + strField(b.Hash) +
			numField(b.Size) + numField(b.Mtime) + numField(b.Rdev) + numField(b.Version)
	}
	return n
}

// inodeSize is at least the length of an inode's key and value encoded.
func inodeSize(ino uint64, v *inode) int {
	n := 4 + decimalDigits(ino)
	if v == nil {
		return n + 4
	}
	return n + 40 + strField(v.Target) + numField(v.Mtime) + numField(v.Atime) + numField(v.Ctime) +
		numField(v.Rdev) + numField(v.Uid) + numField(v.Gid) + xattrsSize(v.Xattr) + numField(v.Born) + numField(v.File)
}

// xattrsSize is at least the length of extended attributes encoded,
// with their field's name; nothing for none, which the encoder omits.
func xattrsSize(x map[string][]byte) int {
	if len(x) == 0 {
		return 0
	}
	n := 8
	for k, v := range x {
		n += 8 + len(k) + (len(v)+2)/3*4
	}
	return n
}

// commitSize is at least the length of r encoded (as sizeHint is).
func commitSize(r *commitRecord) int {
	n := 256 + len(r.Time) + len(r.Source) + len(r.Stage) + len(r.Failure)
	for _, p := range r.Paths {
		n += len(p) + 3
	}
	for _, op := range r.Ops {
		n += opSize(&op)
	}
	for k, e := range r.Entry {
		n += entrySize(k, e)
	}
	for k, v := range r.Inode {
		n += inodeSize(k, v)
	}
	for k, p := range r.Keep {
		n += 64 + len(k) + len(p.Rest) + len(p.Hash)
	}
	return n
}

// opSize is at least the length of a commit's op encoded.
func opSize(op *commitOp) int {
	n := 16 + len(op.Kind) + strField(op.Path) + strField(op.From) + strField(op.Stage) + numField(op.Ino) +
		strField(op.Blob) + numField(op.Mode) + strField(op.Target) + numField(op.Rdev) + strField(op.Backup) +
		numField(op.OldMode) + strField(op.Hash)
	if st := op.Stat; st != nil {
		n += 16 + numField(st.Dev) + numField(st.Ino) + numField(st.Size) + numField(st.Mtime) + numField(st.Ctime)
	}
	n += xattrsSize(op.Xattr)
	if op.Owner != nil {
		n += 64
	}
	if op.Link {
		n += 10
	}
	return n
}

// appendPuts appends m as json.Marshal encodes a map: an object with its
// keys sorted as strings (cmp orders two keys so, key appends one), each
// value appended by val (a nil one as null). It returns the keys in
// that order and where each value is in b (a null's is empty).
func appendPuts[K comparable, V any](b []byte, m map[K]*V, cmp func(a, b K) int, key func([]byte, K) []byte, val func([]byte, *V) []byte) ([]byte, []put[K], []span) {
	puts := make([]put[K], 0, len(m))
	for k := range m {
		puts = append(puts, put[K]{key: k})
	}
	if len(puts) > 1 {
		slices.SortFunc(puts, func(a, b put[K]) int { return cmp(a.key, b.key) })
	}
	spans := make([]span, len(puts))
	b = append(b, '{')
	for i, p := range puts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(key(b, p.key), ':')
		if v := m[p.key]; v != nil {
			start := len(b)
			b = val(b, v)
			spans[i] = span{start, len(b)}
		} else {
			b = append(b, "null"...)
		}
	}
	return append(b, '}'), puts, spans
}

// span is where a value is in a record's frame; an empty one is a
// delete's (null).
type span struct{ start, end int }

func (s span) of(b []byte) []byte {
	if s.start == s.end {
		return nil
	}
	return b[s.start:s.end:s.end]
}

// fill sets each put's value to its span of b.
func fill[K comparable](puts []put[K], spans []span, b []byte) {
	for i := range puts {
		puts[i].v = spans[i].of(b)
	}
}

// compareDecimal orders two numbers as their decimal strings are
// (json.Marshal sorts a map's keys so), without spelling them: of two
// with as many digits the smaller, else the one that is less than the
// other's leading digits or is their prefix.
func compareDecimal(a, b uint64) int {
	da, db := decimalDigits(a), decimalDigits(b)
	switch {
	case da == db:
		return cmp.Compare(a, b)
	case da < db:
		if a <= b/pow10[db-da] {
			return -1
		}
		return 1
	default:
		if a/pow10[da-db] < b {
			return -1
		}
		return 1
	}
}

var pow10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// decimalDigits is how many digits x has in decimal.
func decimalDigits(x uint64) int {
	d := bits.Len64(x) * 1233 >> 12 // about log10(x)
	if d < len(pow10) && x >= pow10[d] {
		d++
	}
	return max(d, 1)
}

// appendDecimal appends k as json.Marshal does a map's number key.
func appendDecimal(b []byte, k uint64) []byte {
	b = append(b, '"')
	b = strconv.AppendUint(b, k, 10)
	return append(b, '"')
}

// appendEntry appends json.Marshal(e).
func appendEntry(b []byte, e *entry) []byte {
	b = append(b, `{"k":`...)
	b = strconv.AppendUint(b, uint64(e.Kind), 10)
	b = appendUintField(b, `,"i":`, e.Ino)
	if e.Opaque {
		b = append(b, `,"o":true`...)
	}
	b = appendIntField(b, `,"ct":`, e.Ctime)
	b = appendStringField(b, `,"r":`, e.Origin)
	if e.Base != nil {
		b = append(b, `,"b":`...)
		b = appendBase(b, e.Base)
	}
	return append(b, '}')
}

func appendBase(b []byte, p *base) []byte {
	b = append(b, `{"p":`...)
	b = appendString(b, p.Path)
	if p.NoLower {
		b = append(b, `,"n":true`...)
	}
	b = append(b, `,"e":`...)
	b = strconv.AppendBool(b, p.Exists)
	b = appendUintField(b, `,"k":`, uint64(p.Kind))
	b = appendUintField(b, `,"m":`, uint64(p.Mode))
	b = appendStringField(b, `,"h":`, p.Hash)
	b = appendIntField(b, `,"s":`, p.Size)
	b = appendIntField(b, `,"t":`, p.Mtime)
	b = appendUintField(b, `,"rd":`, p.Rdev)
	b = appendIntField(b, `,"v":`, p.Version)
	if p.Kept {
		b = append(b, `,"kept":true`...)
	}
	return append(b, '}')
}

// appendInode appends json.Marshal(n).
func appendInode(b []byte, n *inode) []byte {
	b = append(b, `{"m":`...)
	b = strconv.AppendUint(b, uint64(n.Mode), 10)
	if n.Data {
		b = append(b, `,"d":true`...)
	}
	b = appendStringField(b, `,"t":`, n.Target)
	b = appendIntField(b, `,"mt":`, n.Mtime)
	b = appendIntField(b, `,"at":`, n.Atime)
	b = appendIntField(b, `,"ct":`, n.Ctime)
	b = appendUintField(b, `,"rd":`, n.Rdev)
	b = appendIntField(b, `,"u":`, int64(n.Uid))
	b = appendIntField(b, `,"g":`, int64(n.Gid))
	if len(n.Xattr) > 0 {
		b = append(b, `,"x":`...)
		b = appendXattrs(b, n.Xattr)
	}
	b = appendIntField(b, `,"b":`, n.Born)
	b = appendUintField(b, `,"f":`, n.File)
	return append(b, '}')
}

// appendLog appends json.Marshal(l).
func appendLog(b []byte, l *LogEntry) ([]byte, error) {
	b = append(b, `{"time":`...)
	if _, off := l.Time.Zone(); l.Time.Year() < 0 || l.Time.Year() > 9999 || off <= -24*3600 || off >= 24*3600 {
		t, err := l.Time.MarshalJSON() // which refuses these
		if err != nil {
			return nil, err
		}
		b = append(b, t...)
	} else {
		b = append(b, '"')
		b = l.Time.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = append(b, `,"op":`...)
	b = appendString(b, l.Op)
	b = appendStringField(b, `,"path":`, l.Path)
	b = appendStringField(b, `,"from":`, l.From)
	b = appendList(b, `,"paths":`, l.Paths, appendString)
	b = append(b, `,"source":`...)
	b = appendString(b, string(l.Source))
	b = appendStringField(b, `,"by":`, l.By)
	return append(b, '}'), nil
}

// appendList appends name and the array of items, each appended by
// item, unless there are none (omitempty).
func appendList[T any](b []byte, name string, items []T, item func([]byte, T) []byte) []byte {
	if len(items) == 0 {
		return b
	}
	return appendArray(append(b, name...), items, item)
}

// appendIntField appends name and v unless v is 0 (omitempty).
func appendIntField(b []byte, name string, v int64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, name...), v, 10)
}

// appendUintField appends name and v unless v is 0 (omitempty).
func appendUintField(b []byte, name string, v uint64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendUint(append(b, name...), v, 10)
}

// appendStringField appends name and s unless s is "" (omitempty).
func appendStringField(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, name...), s)
}

// appendString appends s as a JSON string, as json.Marshal escapes it:
// plain printable ASCII is copied, anything else (control characters,
// quotes, the HTML characters json escapes, non-ASCII, invalid UTF-8) is
// left to encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendCommit appends json.Marshal(r). A commit's record of 10,000
// files is megabytes, written when the commit starts and again when it
// is done (and by undo): through reflection that was a tenth of a
// commit's CPU.
func appendCommit(b []byte, r *commitRecord) []byte {
	b = append(b, `{"time":`...)
	b = appendString(b, r.Time)
	b = append(b, `,"state":`...)
	b = appendString(b, r.State)
	b = append(b, `,"source":`...)
	b = appendString(b, string(r.Source))
	b = append(b, `,"paths":`...)
	b = appendArray(b, r.Paths, appendString)
	b = append(b, `,"ops":`...)
	b = appendArray(b, r.Ops, appendOp)
	b = append(b, `,"stage":`...)
	b = appendString(b, r.Stage)
	b = append(b, `,"entries":`...)
	b = appendMap(b, r.Entry, strings.Compare, appendString, appendEntry)
	b = append(b, `,"inodes":`...)
	b = appendMap(b, r.Inode, compareDecimal, appendDecimal, appendInode)
	b = appendIntField(b, `,"upto":`, int64(r.Upto))
	b = appendStringField(b, `,"failure":`, r.Failure)
	if len(r.Keep) > 0 {
		b = append(b, `,"keep":`...)
		b = appendMap(b, r.Keep, strings.Compare, appendString, appendKept)
	}
	b = appendIntField(b, `,"stamped":`, r.Stamped)
	return append(b, '}')
}

// appendArray appends items as json.Marshal does a slice: null when nil.
func appendArray[T any](b []byte, items []T, item func([]byte, T) []byte) []byte {
	if items == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = item(b, v)
	}
	return append(b, ']')
}

// appendMap appends m as json.Marshal does: null when nil, else its keys
// sorted (see appendPuts).
func appendMap[K comparable, V any](b []byte, m map[K]*V, cmp func(a, b K) int, key func([]byte, K) []byte, val func([]byte, *V) []byte) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	b, _, _ = appendPuts(b, m, cmp, key, val)
	return b
}

// appendOp appends json.Marshal(op).
func appendOp(b []byte, op commitOp) []byte {
	b = append(b, `{"k":`...)
	b = appendString(b, op.Kind)
	b = appendStringField(b, `,"p":`, op.Path)
	b = appendStringField(b, `,"f":`, op.From)
	b = appendStringField(b, `,"s":`, op.Stage)
	b = appendUintField(b, `,"i":`, op.Ino)
	b = appendStringField(b, `,"b":`, op.Blob)
	b = appendUintField(b, `,"m":`, uint64(op.Mode))
	b = appendStringField(b, `,"t":`, op.Target)
	b = appendUintField(b, `,"rd":`, op.Rdev)
	b = appendStringField(b, `,"u":`, op.Backup)
	b = appendUintField(b, `,"om":`, uint64(op.OldMode))
	b = appendStringField(b, `,"h":`, op.Hash)
	if s := op.Stat; s != nil {
		b = append(b, `,"st":{"d":`...)
		b = strconv.AppendUint(b, s.Dev, 10)
		b = append(b, `,"i":`...)
		b = strconv.AppendUint(b, s.Ino, 10)
		b = append(b, `,"s":`...)
		b = strconv.AppendInt(b, s.Size, 10)
		b = append(b, `,"m":`...)
		b = strconv.AppendInt(b, s.Mtime, 10)
		b = appendIntField(b, `,"c":`, s.Ctime)
		b = append(b, '}')
	}
	if len(op.Xattr) > 0 {
		b = append(b, `,"x":`...)
		b = appendXattrs(b, op.Xattr)
	}
	if o := op.Owner; o != nil {
		b = append(b, `,"o":{"Uid":`...)
		b = strconv.AppendInt(b, int64(o.Uid), 10)
		b = append(b, `,"Gid":`...)
		b = strconv.AppendInt(b, int64(o.Gid), 10)
		b = append(b, '}')
	}
	if op.Link {
		b = append(b, `,"l":true`...)
	}
	return append(b, '}')
}

// appendKept appends json.Marshal(p).
func appendKept(b []byte, p *keptPart) []byte {
	b = append(b, '{')
	if p.Rest != "" {
		b = append(appendString(append(b, `"rest":`...), p.Rest), ',')
	}
	b = appendString(append(b, `"hash":`...), p.Hash)
	b = append(b, `,"mode":`...)
	b = strconv.AppendUint(b, uint64(p.Mode), 10)
	return append(b, '}')
}

// appendXattrs appends json.Marshal(x) of a map that is not nil.
func appendXattrs(b []byte, x map[string][]byte) []byte {
	names := make([]string, 0, len(x))
	for k := range x {
		names = append(names, k)
	}
	slices.Sort(names)
	b = append(b, '{')
	for i, k := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		if v := x[k]; v == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, v)
			b = append(b, '"')
		}
	}
	return append(b, '}')
}
