package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"sync"

	sjson "github.com/segmentio/encoding/json"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/draftfs/draftfs/protocol/internal/jsonscan"
)

// Large results, both ways. A status of 10,000 entries is a 600 KB
// answer, and jsonrpc2 handles it several times over: the daemon's
// Reply marshals the result, then compacts it into the response, then
// again into the message; the client's reader decodes it into Go values
// (a map per entry) only to tell a response from a request, copies it
// into a json.RawMessage, and Call decodes that: most of a large
// status's cost on both sides.
//
// The daemon marshals a large result once and splices it into the
// written line (reply). The client parks a large result its call
// awaits, hands jsonrpc2 the answer with {"$parked":"ID"} in its place,
// and call decodes the parked bytes, once.

// replyBufs holds the buffers answers are encoded in. A daemon that
// holds 100,000 nodes for the kernel runs close to its memory limit,
// where every few megabytes allocated cost a collection of its whole
// heap: the 600 KB of a large answer are not allocated anew each time.
var replyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxReplyBuf is the largest buffer kept for the next answer.
const maxReplyBuf = 4 << 20

// reply answers a request with res.
func (cn *conn) reply(ctx context.Context, id jsonrpc2.ID, res any) {
	buf := replyBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxReplyBuf {
			replyBufs.Put(buf)
		}
	}()
	buf.Reset()
	// Encode writes what Marshal returns, and a newline. Reply writes
	// the message before it returns: buf is free again then.
	if err := json.NewEncoder(buf).Encode(res); err != nil {
		cn.rpc.ReplyWithError(ctx, id, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: "internal error: the answer cannot be encoded: " + err.Error()})
		return
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(b) < bigParams {
		cn.rpc.Reply(ctx, id, json.RawMessage(b))
		return
	}
	marker, drop := cn.st.splice([][]byte{b})
	defer drop()
	cn.rpc.Reply(ctx, id, marker)
}

// await registers a call whose answer may be parked, under a new id.
func (s *stream) await() uint64 {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.awaited == nil {
		s.awaited = map[string][]byte{}
	}
	s.nextAwait++
	s.awaited[strconv.FormatUint(s.nextAwait, 10)] = nil
	return s.nextAwait
}

// forget drops a call's parked result, if its call did not take it,
// and parks no answer to it from now on.
func (s *stream) forget(id uint64) {
	s.smu.Lock()
	defer s.smu.Unlock()
	delete(s.awaited, strconv.FormatUint(id, 10))
}

// take returns the result parked for a call, nil when there is none.
func (s *stream) take(id uint64) []byte {
	s.smu.Lock()
	defer s.smu.Unlock()
	key := strconv.FormatUint(id, 10)
	b := s.awaited[key]
	if b != nil {
		s.awaited[key] = nil
	}
	return b
}

// parkResult takes the result out of a large answer to an awaited call,
// returning the line to hand jsonrpc2; other lines come back as they
// are, for ReadObject to check.
func (s *stream) parkResult(line []byte) []byte {
	var version, id, result []byte
	o := jsonscan.Open(line)
	for o.Next() {
		switch o.Key() {
		case "jsonrpc":
			version = o.Raw()
		case "id":
			id = o.Raw()
		case "result":
			if !o.IsArray() && !o.IsObject() {
				return line
			}
			if start, end, ok := o.Span(); ok {
				result = line[start:end]
			}
		case "method", "error":
			return line
		}
	}
	if o.Finish() != nil || version == nil || id == nil || result == nil {
		return line
	}
	key := string(id)
	s.smu.Lock()
	defer s.smu.Unlock()
	if _, ok := s.awaited[key]; !ok {
		return line
	}
	// The result stays in the line's buffer, which the reader gives up
	// rather than copy it.
	s.lines.Release()
	s.awaited[key] = result
	return fmt.Appendf(nil, `{"jsonrpc":%s,"id":%s,"result":{"$parked":%q}}`, version, id, key)
}

// awaitedResult decodes a call's result, parked or not, into v (nil:
// drop it). segmentio's decoder is encoding/json's drop-in at a third of
// its cost.
type awaitedResult struct {
	s  *stream
	id uint64
	v  any
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *awaitedResult) UnmarshalJSON(b []byte) error {
	if parked := r.s.take(r.id); parked != nil {
		b = parked
	}
	if r.v == nil {
		return nil
	}
	presize(b, r.v)
	return sjson.Unmarshal(b, r.v)
}

// presize gives an empty slice v points to room for every value of the
// large JSON array b, which the decoder fills without growing it: a
// slice grown by doubling costs twice its size in fresh memory, and the
// page faults on it were a tenth of a large status's time.
func presize(b []byte, v any) {
	if len(b) < bigParams {
		return
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Slice || rv.Elem().Len() != 0 {
		return
	}
	if n := jsonscan.Len(b); n > rv.Elem().Cap() {
		rv.Elem().Set(reflect.MakeSlice(rv.Elem().Type(), 0, n))
	}
}
