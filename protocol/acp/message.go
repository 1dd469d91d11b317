package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
)

// message is the top level of one line as the proxy routes it: an
// envelope whose members stay raw JSON, so that what the proxy does not
// rewrite is forwarded as it came.
type message struct {
	object    bool            // the line is a JSON object
	id        json.RawMessage // nil when absent
	hasMethod bool
	method    string          // "" when absent or not a string
	params    json.RawMessage // nil when absent
	result    json.RawMessage // nil when absent
	err       json.RawMessage // nil when absent
}

func (m *message) isRequest() bool      { return m.hasMethod && m.id != nil }
func (m *message) isNotification() bool { return m.hasMethod && m.id == nil }
func (m *message) isResponse() bool     { return !m.hasMethod && m.id != nil }

// parseMessage splits a line into its top-level members. ok is false when
// the line is not JSON at all (a parse error for its sender); valid JSON
// that is not an object parses with object false. Members are matched by
// exact name, and a later duplicate wins, as with JSON.parse (a struct
// would match names regardless of case).
func parseMessage(line []byte) (m message, ok bool) {
	var env map[string]json.RawMessage
	if err := json.Unmarshal(line, &env); err != nil {
		var te *json.UnmarshalTypeError
		return m, errors.As(err, &te) // valid JSON, not an object
	}
	m.object = firstByte(line) == '{'
	m.id, m.params, m.result, m.err = env["id"], env["params"], env["result"], env["error"]
	if method, ok := env["method"]; ok {
		m.hasMethod = true
		m.method, _ = jsonString(method)
	}
	return m, true
}

// eachMember calls fn with the decoded key and raw value of each member
// of the JSON object v, which must be valid JSON; nothing happens when v
// is not an object. Later duplicates are reported after earlier ones, so
// a caller keeping the last one agrees with JSON.parse.
func eachMember(v []byte, fn func(key, val []byte)) {
	eachMemberAt(v, func(key []byte, start, end int) { fn(key, v[start:end]) })
}

// eachMemberAt is eachMember with the value's span in v, which is what
// setMember rewrites, leaving every other byte as it came.
func eachMemberAt(v []byte, fn func(key []byte, start, end int)) {
	dec := json.NewDecoder(bytes.NewReader(v))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return
		}
		var val json.RawMessage
		if dec.Decode(&val) != nil {
			return
		}
		end := int(dec.InputOffset())
		fn([]byte(k.(string)), end-len(val), end)
	}
}

// member returns the raw value of the last member key of the object v.
func member(v []byte, key string) (val []byte, ok bool) {
	var env map[string]json.RawMessage
	if json.Unmarshal(v, &env) != nil {
		return nil, false
	}
	val, ok = env[key]
	return val, ok
}

// setMember returns a copy of the object v (valid JSON) with every member
// named key holding val, or with key: val appended when v has none;
// everything else keeps its bytes and order.
func setMember(v []byte, key string, val []byte) []byte {
	var spans [][2]int // value spans to replace
	base := len(v) - len(bytes.TrimLeft(v, " \t\n\r"))
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
	var els []json.RawMessage
	if json.Unmarshal(v, &els) != nil || els == nil {
		return nil
	}
	out := make([][]byte, len(els))
	for i, e := range els {
		out[i] = e
	}
	return out
}

func isObject(v []byte) bool { return firstByte(v) == '{' }

func firstByte(v []byte) byte {
	if v = bytes.TrimLeft(v, " \t\n\r"); len(v) > 0 {
		return v[0]
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
