package acp

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// message is the top level of one line as the proxy routes it. Its raw
// fields alias the line; values the proxy does not rewrite are never
// decoded, so what it forwards is the line as it came.
type message struct {
	object    bool   // the line is a JSON object
	id        []byte // raw; nil when absent
	hasMethod bool
	method    string // "" when absent or not a string
	params    []byte // raw; nil when absent
	result    []byte // raw; nil when absent
	err       []byte // raw; nil when absent
}

func (m *message) isRequest() bool      { return m.hasMethod && m.id != nil }
func (m *message) isNotification() bool { return m.hasMethod && m.id == nil }
func (m *message) isResponse() bool     { return !m.hasMethod && m.id != nil }

// parseMessage splits a line into its top-level members. ok is false when
// the line is not JSON at all (a parse error for its sender); valid JSON
// that is not an object parses with object false.
func parseMessage(line []byte) (m message, ok bool) {
	if !json.Valid(line) {
		return m, false
	}
	eachMember(line, func(key, val []byte) {
		switch string(key) {
		case "id":
			m.id = val
		case "method":
			m.hasMethod = true
			m.method = ""
			if s, ok := jsonString(val); ok {
				m.method = s
			}
		case "params":
			m.params = val
		case "result":
			m.result = val
		case "error":
			m.err = val
		}
	})
	m.object = firstByte(line) == '{'
	return m, true
}

// eachMember calls fn with the decoded key and raw value of each member
// of the JSON object v, which must be valid JSON; nothing happens when v
// is not an object. Later duplicates are reported after earlier ones, so
// a caller keeping the last one agrees with JSON.parse.
func eachMember(v []byte, fn func(key, val []byte)) {
	eachMemberAt(v, func(key []byte, start, end int) { fn(key, v[start:end]) })
}

// eachMemberAt is eachMember with the value's span in v.
func eachMemberAt(v []byte, fn func(key []byte, start, end int)) {
	i := skipSpace(v, 0)
	if i >= len(v) || v[i] != '{' {
		return
	}
	i = skipSpace(v, i+1)
	for i < len(v) && v[i] == '"' {
		end := skipString(v, i)
		key := v[i:end]
		i = skipSpace(v, end)
		i = skipSpace(v, i+1) // ':'
		vend := skipValue(v, i)
		fn(decodeKey(key), i, vend)
		i = skipSpace(v, vend)
		if i < len(v) && v[i] == ',' {
			i = skipSpace(v, i+1)
		}
	}
}

// member returns the raw value of the last member key of the object v.
func member(v []byte, key string) (val []byte, ok bool) {
	eachMember(v, func(k, x []byte) {
		if string(k) == key {
			val, ok = x, true
		}
	})
	return val, ok
}

// setMember returns a copy of the object v (valid JSON) with every member
// named key holding val, or with key: val appended when v has none;
// everything else keeps its bytes and order.
func setMember(v []byte, key string, val []byte) []byte {
	var spans [][2]int // value spans to replace
	base := 0
	if i := skipSpace(v, 0); i < len(v) {
		base = i
	}
	eachMemberAt(v, func(k []byte, start, end int) {
		if string(k) == key {
			spans = append(spans, [2]int{start, end})
		}
	})
	out := make([]byte, 0, len(v)+len(key)+len(val)+4)
	if len(spans) == 0 {
		end := bytes.LastIndexByte(v, '}')
		body := bytes.TrimSpace(v[base+1 : end])
		out = append(out, v[:end]...)
		if len(body) > 0 {
			out = append(out, ',')
		}
		out = appendJSONString(out, []byte(key))
		out = append(out, ':')
		out = append(out, val...)
		return append(out, v[end:]...)
	}
	last := 0
	for _, s := range spans {
		out = append(out, v[last:s[0]]...)
		out = append(out, val...)
		last = s[1]
	}
	return append(out, v[last:]...)
}

// elements returns the raw elements of the JSON array v (valid JSON), nil
// when v is not an array.
func elements(v []byte) [][]byte {
	i := skipSpace(v, 0)
	if i >= len(v) || v[i] != '[' {
		return nil
	}
	out := [][]byte{}
	i = skipSpace(v, i+1)
	for i < len(v) && v[i] != ']' {
		end := skipValue(v, i)
		out = append(out, v[i:end])
		i = skipSpace(v, end)
		if i < len(v) && v[i] == ',' {
			i = skipSpace(v, i+1)
		}
	}
	return out
}

func isObject(v []byte) bool { return firstByte(v) == '{' }

func firstByte(v []byte) byte {
	if i := skipSpace(v, 0); i < len(v) {
		return v[i]
	}
	return 0
}

func isTrue(v []byte) bool { return string(bytes.TrimSpace(v)) == "true" }

// jsonString decodes v when it is a JSON string.
func jsonString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

func decodeKey(k []byte) []byte {
	if bytes.IndexByte(k, '\\') < 0 {
		return k[1 : len(k)-1]
	}
	s, _ := jsonString(k)
	return []byte(s)
}

// idKey is the key under which a raw id is matched with its response:
// peers may re-encode an id they echo (1.0 comes back as 1), so numbers
// are compared by value and strings by their text.
func idKey(raw []byte) string {
	if s, ok := jsonString(raw); ok {
		return "s" + s
	}
	t := string(bytes.TrimSpace(raw))
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		return "n" + strconv.FormatInt(n, 10)
	}
	if f, err := strconv.ParseFloat(t, 64); err == nil {
		if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return "n" + strconv.FormatInt(int64(f), 10)
		}
		return "n" + strconv.FormatFloat(f, 'g', -1, 64)
	}
	return "x" + t
}

func skipSpace(v []byte, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n' || v[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the JSON string starting at v[i].
func skipString(v []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(v[j:], '"')
		if k < 0 {
			return len(v)
		}
		j += k
		bs := 0
		for b := j - 1; b > i && v[b] == '\\'; b-- {
			bs++
		}
		j++
		if bs%2 == 0 {
			return j
		}
	}
}

// skipValue returns the index after the JSON value starting at v[i];
// v must be valid JSON.
func skipValue(v []byte, i int) int {
	if i >= len(v) {
		return i
	}
	switch v[i] {
	case '"':
		return skipString(v, i)
	case '{', '[':
		depth := 0
		for i < len(v) {
			switch v[i] {
			case '"':
				i = skipString(v, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(v) {
		switch v[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}
