package control

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/draftfs/draftfs/protocol/internal/jsonscan"
	"github.com/sourcegraph/jsonrpc2"
)

// A request whose params hold a large text goes out with a small
// stand-in for its params, which WriteObject replaces by the params'
// JSON in pieces: jsonrpc2 would marshal the params, then the request
// that holds them, then the message that holds the request, each time
// through encoding/json's growing buffers and copies: about ten copies of
// the text in all. The stand-in, {"$splice":"ID"}, cannot occur inside a
// JSON string, whose quotes are escaped.

// splice registers params given as the pieces of their JSON, and returns
// their stand-in, to pass as a call's params, and a func that drops them
// once the call returns.
func (s *stream) splice(pieces [][]byte) (params json.RawMessage, drop func()) {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.splices == nil {
		s.splices = map[int][][]byte{}
	}
	s.nextSplice++
	id := s.nextSplice
	s.splices[id] = pieces
	return spliceMarker(id), func() {
		s.smu.Lock()
		defer s.smu.Unlock()
		delete(s.splices, id)
	}
}

func spliceMarker(id int) []byte { return fmt.Appendf(nil, `{"$splice":"%d"}`, id) }

// bigParams is the size of message from which the daemon parks its
// params.
const bigParams = 64 << 10

// The daemon's side of the same: jsonrpc2 decodes a request's params into
// a map of Go values and marshals them again, through growing buffers,
// and then a handler decodes them: a large write held many times its
// size.
// ReadObject takes a large message's params out of the line, and hands
// jsonrpc2 the message with {"$parked":"TOKEN"} in their place; the
// connection's handler puts them back (unpark) before it decodes them.
// A client that sends a stand-in of its own can only name its own
// requests' params, and tokens carry a random part it does not know.

// park takes the params object out of line; the token is "" when there
// is none to take.
func (s *stream) park(line []byte) (small []byte, token string) {
	start, end := paramsSpan(line)
	if start < 0 {
		return line, ""
	}
	s.smu.Lock()
	if s.parked == nil {
		s.parked = map[string][]byte{}
	}
	s.nextPark++
	token = fmt.Sprintf("%s-%d", parkNonce, s.nextPark)
	s.parked[token] = bytes.Clone(line[start:end])
	s.smu.Unlock()
	small = slices.Concat(line[:start], []byte(`{"$parked":"`+token+`"}`), line[end:])
	return small, token
}

// parkNonce makes this process's tokens unguessable.
var parkNonce = func() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}()

// paramsSpan finds where the top-level "params" object of a message
// lies: start and end offsets, or -1 when it has none.
func paramsSpan(line []byte) (start, end int) {
	for o := jsonscan.Open(line); o.Next(); {
		if o.Key() == "params" && o.IsObject() {
			if start, end, ok := o.Span(); ok {
				return start, end
			}
			break
		}
	}
	return -1, -1
}

// unpark puts a request's parked params back.
func (s *stream) unpark(req *jsonrpc2.Request) {
	const prefix = `{"$parked":"`
	if req.Params == nil || !bytes.HasPrefix(*req.Params, []byte(prefix)) {
		return
	}
	token := strings.TrimSuffix(strings.TrimPrefix(string(*req.Params), prefix), `"}`)
	s.smu.Lock()
	params, ok := s.parked[token]
	delete(s.parked, token)
	s.smu.Unlock()
	if ok {
		*req.Params = params
	}
}

func (s *stream) unparkToken(token string) {
	s.smu.Lock()
	defer s.smu.Unlock()
	delete(s.parked, token)
}
