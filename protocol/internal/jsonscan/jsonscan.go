// Package jsonscan reads the members of a JSON object in place, without
// decoding or copying it: the transports use it to find a message's id,
// its params and its large strings in lines of up to tens of megabytes,
// and in the first part of a line too long to read whole.
//
// One tokenizer pass reads the input: a member's value is read through
// only when the caller moves on, spans it, or enters it.
package jsonscan

import (
	"bytes"

	"github.com/segmentio/encoding/json"
)

// Object reads the members of one JSON object, in order. The input may
// be cut short: the members it holds whole are read.
type Object struct {
	t     *json.Tokenizer
	n     int // the input's length, for offsets
	depth int // the tokenizer's depth of this object's members
	done  bool

	key   string
	value []byte // the first token of the current member's value
	start int    // its offset in the input
	end   int    // the offset after the value, once read through (else 0)
	open  bool   // the value is an object or array not read through yet
	child *Object
}

// Open starts reading the object b holds; an Object with no members
// when b does not start with one.
func Open(b []byte) *Object {
	o := &Object{t: json.NewTokenizer(b), n: len(b), depth: 1}
	if !o.t.Next() || o.t.Delim != '{' {
		o.done = true
	}
	return o
}

// Find returns the value of the first member called key of the object
// b holds; false when it has none, or b ends before that value does.
func Find(b []byte, key string) ([]byte, bool) {
	for o := Open(b); o.Next(); {
		if o.Key() == key {
			start, end, ok := o.Span()
			if !ok {
				return nil, false
			}
			return b[start:end:end], true
		}
	}
	return nil, false
}

// Next moves to the next member, reading through what is left of the
// current one's value; false at the end of the object, of the input, or
// at what is not JSON (see Err).
func (o *Object) Next() bool {
	if o.done {
		return false
	}
	if o.child != nil {
		if !o.child.done {
			o.skip()
		}
		o.child = nil
	} else if o.open {
		o.skip()
	}
	t := o.t
	for t.Next() {
		switch {
		case t.Delim == ',':
		case t.IsKey && t.Depth == o.depth:
			o.key = string(t.String())
			if !t.Next() || t.Delim != ':' || !t.Next() {
				o.done = true
				return false
			}
			o.value = t.Value
			o.start = o.n - t.Remaining() - len(t.Value)
			o.open = t.Delim == '{' || t.Delim == '['
			o.end = 0
			if !o.open {
				o.end = o.start + len(t.Value)
			}
			return true
		default: // the object's closing brace
			o.done = true
			return false
		}
	}
	o.done = true
	return false
}

// skip reads through the current value, an object or array: to the
// brace or bracket that closes it, which stands at the members' depth,
// recording the offset after it.
func (o *Object) skip() {
	o.open = false
	t := o.t
	for t.Next() {
		if t.Depth == o.depth && (t.Delim == '}' || t.Delim == ']') {
			o.end = o.n - t.Remaining()
			return
		}
	}
	o.done = true
}

// Key is the current member's key.
func (o *Object) Key() string { return o.key }

// Raw is the current member's value as it is in the input when it is
// not an object or array (a string keeps its quotes and escapes); for
// those, just their opening brace or bracket.
func (o *Object) Raw() []byte { return o.value }

// IsNull, IsString, IsObject and IsArray say what the current member's
// value is.
func (o *Object) IsNull() bool   { return len(o.value) > 0 && o.value[0] == 'n' }
func (o *Object) IsString() bool { return len(o.value) > 0 && o.value[0] == '"' }
func (o *Object) IsObject() bool { return len(o.value) > 0 && o.value[0] == '{' }
func (o *Object) IsArray() bool  { return len(o.value) > 0 && o.value[0] == '[' }

// Span returns where the current member's value lies in the input,
// reading through it; false when the input ends first, or the value
// was entered (see Enter).
func (o *Object) Span() (start, end int, ok bool) {
	if o.open && o.child == nil {
		o.skip()
	}
	return o.start, o.end, o.end > 0
}

// Enter reads the members of the current member's value, an object
// (nil when it is not one). Next on o reads through what the returned
// Object leaves unread.
func (o *Object) Enter() *Object {
	if !o.open || !o.IsObject() || o.child != nil {
		return nil
	}
	o.child = &Object{t: o.t, n: o.n, depth: o.depth + 1}
	return o.child
}

// Finish reads the rest of the input and returns Err: whether all of it
// is JSON tokens.
func (o *Object) Finish() error {
	for o.t.Next() {
	}
	o.done = true
	return o.Err()
}

// Err is what was not JSON, if reading stopped there.
func (o *Object) Err() error { return o.t.Err }

// String is the current member's value when it is a string (else "").
func (o *Object) String() string {
	var s string
	if !o.IsString() || json.Unmarshal(o.value, &s) != nil {
		return ""
	}
	return s
}

// Len returns how many values the JSON array b holds, reading its bytes
// once without tokenizing them, so that a decoder can size its slice
// once instead of growing it by doubling; 0 when b holds no array. b
// must be valid JSON (as a whole message checked before).
func Len(b []byte) int {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 || b[0] != '[' {
		return 0
	}
	depth, commas, values := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			continue
		case '"':
			for i++; i < len(b); i++ {
				j := bytes.IndexAny(b[i:], `"\`)
				if j < 0 {
					return 0
				}
				if i += j; b[i] == '"' {
					break
				}
				i++ // the escaped byte
			}
		case '[', '{':
			depth++
		case ']', '}':
			if depth--; depth == 0 {
				if !values {
					return 0
				}
				return commas + 1
			}
		case ',':
			if depth == 1 {
				commas++
			}
		}
		if depth >= 1 && i > 0 {
			values = true
		}
	}
	return 0
}
