package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/draftfs/draftfs/protocol/internal/jsonscan"
	"github.com/draftfs/draftfs/protocol/internal/lines"
	"github.com/sourcegraph/jsonrpc2"
)

// MaxMessage is the largest message, in bytes without its newline, the
// daemon reads. A longer one is answered with an error (-32600) and
// skipped; the connection stays open.
const MaxMessage = 64 << 20

// maxClientMessage bounds what a client reads from the daemon, which it
// trusts: large enough for a diff of a 100 MiB file.
const maxClientMessage = 1 << 31

// stream frames JSON-RPC messages one per line. Unlike
// jsonrpc2.NewPlainObjectStream, whose json.Decoder cannot recover from
// bad input (jsonrpc2 then closes the connection), it reads whole lines
// and, when answer is set, answers a line that is not a usable message
// itself (parse error, invalid request, over the size limit) and reads
// on, so a client's mistake never costs it the connection.
type stream struct {
	conn   io.ReadWriteCloser
	max    int  // read only
	answer bool // read only
	// writeTimeout, when set, bounds each write: a peer that does not
	// take a message in that time is gone (set before use, read only).
	writeTimeout time.Duration

	lines *lines.Reader // only ReadObject touches it

	wmu sync.Mutex // serialises writes: jsonrpc2 and rejections

	smu        sync.Mutex // protects the following
	splices    map[int][][]byte
	nextSplice int
	parked     map[string][]byte // stand-in token -> params
	nextPark   int
	awaited    map[string][]byte // a client's calls by id -> parked result or nil
	nextAwait  uint64
}

func newStream(conn io.ReadWriteCloser, max int, answer bool) *stream {
	return &stream{conn: conn, lines: lines.NewReader(conn, max), max: max, answer: answer}
}

// size spells a byte count for people.
func size(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadObject implements jsonrpc2.ObjectStream.
func (s *stream) ReadObject(v any) error {
	for {
		line, err := s.lines.Next()
		if errors.Is(err, lines.ErrTooLong) {
			err = fmt.Errorf("invalid request: the message is over the limit of %s: send large texts in pieces (buffer/didChange ranges)", size(s.max))
			if !s.answer {
				return err
			}
			s.reject(idInHead(s.lines.Head()), jsonrpc2.CodeInvalidRequest, err.Error())
			continue
		}
		if err != nil {
			return err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if !s.answer && len(line) >= bigParams {
			line = s.parkResult(line)
		}
		if bad := checkMessage(line); bad != nil {
			if !s.answer {
				return bad
			}
			s.reject(bad.id, bad.code, bad.msg)
			continue
		}
		full, token := line, ""
		if s.answer && len(line) >= bigParams {
			line, token = s.park(line)
		}
		if err := json.Unmarshal(line, v); err != nil {
			s.unparkToken(token)
			if !s.answer {
				return err
			}
			s.reject(idOf(full), jsonrpc2.CodeInvalidRequest, "not a JSON-RPC 2.0 message: "+err.Error())
			continue
		}
		return nil
	}
}

// WriteObject implements jsonrpc2.ObjectStream: one line per message
// (json.Marshal never emits a raw newline), written whole, with spliced
// params written in place of their stand-ins.
func (s *stream) WriteObject(obj any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	s.smu.Lock()
	for id, pieces := range s.splices {
		marker := spliceMarker(id)
		if i := bytes.Index(b, marker); i >= 0 {
			s.smu.Unlock()
			return s.writeLine(slices.Concat([][]byte{b[:i]}, pieces, [][]byte{b[i+len(marker):], []byte("\n")})...)
		}
	}
	s.smu.Unlock()
	return s.writeLine(append(b, '\n'))
}

// writeLine writes the pieces of one line, which ends with a newline.
func (s *stream) writeLine(pieces ...[]byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if d, ok := s.conn.(interface{ SetWriteDeadline(time.Time) error }); ok && s.writeTimeout > 0 {
		d.SetWriteDeadline(time.Now().Add(s.writeTimeout))
	}
	bufs := net.Buffers(pieces)
	_, err := bufs.WriteTo(s.conn)
	if err != nil {
		// A message may be half written: nothing after it could be read.
		s.conn.Close()
	}
	return err
}

// Close implements jsonrpc2.ObjectStream.
func (s *stream) Close() error { return s.conn.Close() }

// reject answers a message that never reaches jsonrpc2. id is the
// message's id as sent, nil when it has none or it cannot be told.
func (s *stream) reject(id json.RawMessage, code int64, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc2.Error  `json:"error"`
	}{"2.0", id, jsonrpc2.Error{Code: code, Message: msg}})
	if err != nil {
		return
	}
	s.writeLine(append(b, '\n')) // a failed write shows up as the next read's error
}

// badMessage is why a line is not a message jsonrpc2 can take.
type badMessage struct {
	id   json.RawMessage
	code int64
	msg  string
}

func (b *badMessage) Error() string { return b.msg }

// envelope is a message's top level, with the small members left raw
// and of the others only what checkMessage looks at: a large request's
// params are not copied to be checked.
type envelope struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  valueKind       `json:"params"`
	Result  valueKind       `json:"result"`
	Error   valueKind       `json:"error"`
}

// valueKind is the first byte of a JSON value ('{', '[', '"', 'n' for
// null...), 0 when the member is absent.
type valueKind byte

// UnmarshalJSON implements json.Unmarshaler.
func (k *valueKind) UnmarshalJSON(b []byte) error {
	*k = valueKind(b[0])
	return nil
}

// checkMessage reports what is wrong with a line as a JSON-RPC 2.0
// message, in the terms of the specification's error codes: -32700 for
// what is not UTF-8 JSON, -32600 for JSON that is not a message, -32602
// for text that is not valid Unicode. It also refuses what jsonrpc2 would
// mishandle: batches, and ids that are not strings or integers that fit
// an int64.
func checkMessage(line []byte) *badMessage {
	if !utf8.Valid(line) {
		return &badMessage{code: jsonrpc2.CodeParseError, msg: "parse error: the message is not valid UTF-8 (JSON text must be UTF-8)"}
	}
	switch line[0] {
	case '{':
	case '[':
		if json.Valid(line) {
			return &badMessage{code: jsonrpc2.CodeInvalidRequest, msg: "invalid request: batches are not supported, send one message per line"}
		}
	}
	// json.Unmarshal checks the whole text before decoding: a syntax
	// error anywhere is reported as one.
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return &badMessage{code: jsonrpc2.CodeParseError, msg: "parse error: malformed JSON: " + err.Error()}
		}
		if line[0] != '{' {
			return &badMessage{code: jsonrpc2.CodeInvalidRequest, msg: "invalid request: a message must be a JSON object"}
		}
		return &badMessage{code: jsonrpc2.CodeInvalidRequest, msg: "invalid request: " + err.Error()}
	}
	if line[0] != '{' {
		return &badMessage{code: jsonrpc2.CodeInvalidRequest, msg: "invalid request: a message must be a JSON object"}
	}
	id := env.ID
	if id != nil && !validID(id) {
		return &badMessage{code: jsonrpc2.CodeInvalidRequest, msg: `invalid request: "id" must be a string or an integer from 0 to 2^63-1`}
	}
	if isNull(id) {
		id = nil
	}
	if env.JSONRPC == nil || *env.JSONRPC != "2.0" {
		return &badMessage{id: id, code: jsonrpc2.CodeInvalidRequest, msg: `invalid request: "jsonrpc" must be "2.0"`}
	}
	isResponse := env.Result != 0 || env.Error != 0
	switch {
	case env.Method == nil && !isResponse:
		return &badMessage{id: id, code: jsonrpc2.CodeInvalidRequest, msg: `invalid request: no "method"`}
	case env.Method != nil && isResponse:
		return &badMessage{id: id, code: jsonrpc2.CodeInvalidRequest, msg: `invalid request: a message has either "method" or "result"/"error", not both`}
	case env.Method != nil && (len(env.Method) == 0 || env.Method[0] != '"'):
		return &badMessage{id: id, code: jsonrpc2.CodeInvalidRequest, msg: `invalid request: "method" must be a string`}
	case env.Params != 0 && env.Params != 'n' && env.Params != '{' && env.Params != '[':
		return &badMessage{id: id, code: jsonrpc2.CodeInvalidParams, msg: `invalid params: "params" must be an object`}
	}
	if at, ok := loneSurrogate(line); ok {
		return &badMessage{id: id, code: jsonrpc2.CodeInvalidParams, msg: fmt.Sprintf("invalid params: text is not valid Unicode (lone UTF-16 surrogate %s): send text as UTF-8", at)}
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// validID accepts what jsonrpc2 round-trips: null, a string, or an
// integer in [0, 2^63).
func validID(raw json.RawMessage) bool {
	switch raw[0] {
	case 'n':
		return true
	case '"':
		return true
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil && n >= 0
}

// idInHead finds the id of a message from its start alone: a top-level
// "id" member that comes before anything too long to fit (encoders that
// sort keys, as Go's does for maps, put it before "params"). nil when it
// cannot tell.
func idInHead(head []byte) json.RawMessage {
	id, ok := jsonscan.Find(head, "id")
	if !ok || !validID(id) || isNull(id) {
		return nil
	}
	return id
}

// idOf extracts a line's id if it has a usable one.
func idOf(line []byte) json.RawMessage {
	var env envelope
	if json.Unmarshal(line, &env) != nil || env.ID == nil || !validID(env.ID) || isNull(env.ID) {
		return nil
	}
	return env.ID
}

// loneSurrogate finds a \u escape of a UTF-16 surrogate that is not half
// of a pair: encoding/json would turn it into U+FFFD without a word. The
// line must be valid JSON, where a backslash only ever starts an escape.
func loneSurrogate(line []byte) (string, bool) {
	for i := 0; i < len(line); i++ {
		if line[i] != '\\' {
			continue
		}
		if i+1 < len(line) && line[i+1] != 'u' {
			i++ // a one-character escape, maybe of a backslash
			continue
		}
		r, ok := hex4(line, i+2)
		if !ok {
			continue
		}
		switch {
		case utf16.IsSurrogate(r) && r < 0xdc00:
			r2, ok2 := rune(0), false
			if i+11 < len(line) && line[i+6] == '\\' && line[i+7] == 'u' {
				r2, ok2 = hex4(line, i+8)
			}
			if !ok2 || r2 < 0xdc00 || r2 > 0xdfff {
				return string(line[i : i+6]), true
			}
			i += 11
		case utf16.IsSurrogate(r):
			return string(line[i : i+6]), true
		default:
			i += 5
		}
	}
	return "", false
}

// hex4 parses the four hex digits at b[at:].
func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[at:at+4]), 16, 16)
	return rune(n), err == nil
}
