//go:build linux

package overlay

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// The write-ahead log's records, entries and inodes are encoded by hand:
// every change through the mount writes one record, and encoding/json's
// reflection, its sorting of map keys by reflection and its compacting
// again of values it was given encoded were a sixth of the daemon's CPU
// time per file tar creates. The bytes are exactly json.Marshal's
// (TestEncodersMatchJSON), so records read back as before.

// appendRecord appends r as json.Marshal would encode it.
func appendRecord(b []byte, r *walRecord) []byte {
	b = append(b, `{"q":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	if len(r.Entries) > 0 {
		b = append(b, `,"e":`...)
		b = appendRawMap(b, r.Entries, func(k string) string { return k })
	}
	if len(r.Inodes) > 0 {
		b = append(b, `,"i":`...)
		b = appendRawMap(b, r.Inodes, func(k uint64) string { return strconv.FormatUint(k, 10) })
	}
	if r.NextIno != 0 {
		b = append(b, `,"n":`...)
		b = strconv.AppendUint(b, r.NextIno, 10)
	}
	b = appendList(b, `,"l":`, r.Log, appendRaw)
	if len(r.Commits) > 0 {
		b = append(b, `,"c":`...)
		b = appendRawMap(b, r.Commits, func(k uint64) string { return strconv.FormatUint(k, 10) })
	}
	return append(b, '}')
}

// sizeHint is about the length of r encoded: the buffer appendRecord
// fills is made once, not grown (a commit's record of 10,000 files is
// megabytes, and growing it was a fifth of what a commit allocates).
func (r *walRecord) sizeHint() int {
	n := 64
	for k, v := range r.Entries {
		n += len(k) + len(v) + 8
	}
	for _, v := range r.Inodes {
		n += len(v) + 24
	}
	for _, v := range r.Log {
		n += len(v) + 1
	}
	for _, v := range r.Commits {
		n += len(v) + 24
	}
	return n
}

// appendList appends name and the array of items, each appended by
// item, unless there are none (omitempty).
func appendList[T any](b []byte, name string, items []T, item func([]byte, T) []byte) []byte {
	if len(items) == 0 {
		return b
	}
	b = append(append(b, name...), '[')
	for i, v := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = item(b, v)
	}
	return append(b, ']')
}

// appendRawMap appends m, whose values are compact JSON (nil: null), as
// an object with its keys in json.Marshal's order (sorted as strings).
func appendRawMap[K comparable](b []byte, m map[K]json.RawMessage, name func(K) string) []byte {
	type pair struct {
		name string
		v    json.RawMessage
	}
	pairs := make([]pair, 0, len(m))
	for k, v := range m {
		pairs = append(pairs, pair{name(k), v})
	}
	if len(pairs) > 1 {
		slices.SortFunc(pairs, func(a, b pair) int {
			switch {
			case a.name < b.name:
				return -1
			case a.name > b.name:
				return 1
			}
			return 0
		})
	}
	b = append(b, '{')
	for i, p := range pairs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, p.name)
		b = append(b, ':')
		b = appendRaw(b, p.v)
	}
	return append(b, '}')
}

func appendRaw(b []byte, v json.RawMessage) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return append(b, v...)
}

// encodeEntry is json.Marshal(e).
func encodeEntry(e *entry) json.RawMessage {
	b := make([]byte, 0, 64)
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

// encodeInode is json.Marshal(n).
func encodeInode(n *inode) json.RawMessage {
	b := make([]byte, 0, 96)
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
		names := make([]string, 0, len(n.Xattr))
		for k := range n.Xattr {
			names = append(names, k)
		}
		slices.Sort(names)
		b = append(b, `,"x":{`...)
		for i, k := range names {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			if v := n.Xattr[k]; v == nil {
				b = append(b, "null"...)
			} else {
				b = append(b, '"')
				b = base64.StdEncoding.AppendEncode(b, v)
				b = append(b, '"')
			}
		}
		b = append(b, '}')
	}
	b = appendIntField(b, `,"b":`, n.Born)
	b = appendUintField(b, `,"f":`, n.File)
	return append(b, '}')
}

// encodeLog is json.Marshal(l).
func encodeLog(l *LogEntry) (json.RawMessage, error) {
	t, err := l.Time.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 96+len(l.Path)+len(l.By))
	b = append(b, `{"time":`...)
	b = append(b, t...)
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
