package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/segmentio/encoding/json"

	"github.com/draftfs/draftfs/protocol/internal/jsonscan"
	"github.com/draftfs/draftfs/protocol/internal/lines"
)

// The stdio transport. The SDK's own reads a message with a growing
// buffer, and the SDK then copies and re-reads a tool's arguments several
// times over, holding many times a write_file's text in memory. This
// one reads each line into a buffer of its size, and takes the large
// string arguments of a tools/call out of the message before the SDK
// decodes it (largeArgs): the SDK decodes a message of a few hundred
// bytes, and the text reaches the tool held once. A line over the limit,
// or one that is not a JSON-RPC message, is answered with an error and
// skipped, and the session goes on.

// largeArg is the size from which a string argument travels beside the
// message rather than in it.
const largeArg = 64 << 10

// stdioTransport serves one session on r and w.
type stdioTransport struct {
	r     io.Reader
	w     io.Writer
	max   int // the longest line read, without its newline
	large *largeArgs
}

// Connect implements sdk.Transport.
func (t *stdioTransport) Connect(context.Context) (sdk.Connection, error) {
	c := &stdioConn{w: t.w, large: t.large, incoming: make(chan incoming), closed: make(chan struct{})}
	go c.readLoop(t.r, t.max)
	return c, nil
}

// incoming is what the read loop hands to Read.
type incoming struct {
	msg jsonrpc.Message
	err error
}

// stdioConn is one session's connection.
type stdioConn struct {
	large    *largeArgs
	incoming chan incoming

	closeOnce sync.Once
	closed    chan struct{}

	writeMu sync.Mutex // serialises writes of w
	w       io.Writer
}

// readLoop reads messages until the input ends, answering bad lines
// itself.
func (c *stdioConn) readLoop(r io.Reader, max int) {
	lr := lines.NewReader(r, max)
	for {
		line, err := lr.Next()
		switch {
		case errors.Is(err, lines.ErrTooLong):
			c.reject(requestID(lr.Head()), jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("Invalid request: a message over the limit of %d MiB was skipped; write large files in parts (append_file)", max>>20))
			continue
		case err != nil:
			c.deliver(incoming{err: err})
			return
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		msg, err := c.decode(line)
		if err != nil {
			c.reject(requestID(line), jsonrpc.CodeParseError, "Parse error: "+err.Error())
			continue
		}
		if !c.deliver(incoming{msg: msg}) {
			return
		}
	}
}

// deliver hands in to Read; false once the connection is closed.
func (c *stdioConn) deliver(in incoming) bool {
	select {
	case c.incoming <- in:
		return true
	case <-c.closed:
		return false
	}
}

// decode parses one line, taking a tools/call's large string arguments
// out first.
func (c *stdioConn) decode(line []byte) (jsonrpc.Message, error) {
	if line[0] == '[' {
		return nil, errors.New("JSON-RPC batches are not supported: send one message per line")
	}
	spans, id, err := largeStrings(line)
	if err != nil {
		return nil, err
	}
	var taken []string
	if len(spans) > 0 {
		line, taken, err = c.large.take(line, spans)
		if err != nil {
			return nil, err
		}
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		c.large.drop(taken)
		return nil, err
	}

	c.large.attach(id, taken)
	return msg, nil
}

// reject answers a message that will not be handled.
func (c *stdioConn) reject(id jsonrpc.ID, code int64, message string) {
	c.Write(context.Background(), &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: message}})
}

// Read implements sdk.Connection.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case in := <-c.incoming:
		return in.msg, in.err
	}
}

// Write implements sdk.Connection. Answering a request lets go of the
// large arguments its tool did not take.
func (c *stdioConn) Write(_ context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Response); ok && r.ID.IsValid() {
		c.large.answered(r.ID)
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err = c.w.Write(append(data, '\n'))
	return err
}

// Close implements sdk.Connection; the read loop ends at its next line
// or at the end of the input.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID implements sdk.Connection: stdio has no sessions.
func (c *stdioConn) SessionID() string { return "" }

// span is where a string value lies in a line.
type span struct{ start, end int }

// largeStrings finds, in a tools/call request, the string values of
// params.arguments of at least largeArg bytes, and the request's id. It
// checks only the line's structure; DecodeMessage checks the rest.
func largeStrings(line []byte) (spans []span, id jsonrpc.ID, err error) {
	var method string
	isRequest := false
	o := jsonscan.Open(line)
	for o.Next() {
		switch {
		case o.Key() == "method" && o.IsString():
			method = o.String()
		case o.Key() == "id" && !o.IsObject() && !o.IsArray():
			isRequest = true
			id = idOf(o.Raw())
		case o.Key() == "params":
			for p := o.Enter(); p != nil && p.Next(); {
				if p.Key() != "arguments" {
					continue
				}
				for a := p.Enter(); a != nil && a.Next(); {
					if a.IsString() && len(a.Raw()) >= largeArg {
						start, end, _ := a.Span()
						spans = append(spans, span{start, end})
					}
				}
			}
		}
	}
	if err := o.Finish(); err != nil {
		return nil, jsonrpc.ID{}, err
	}
	if method != "tools/call" || !isRequest {
		spans = nil
	}
	return spans, id, nil
}

// idOf reads a request id; an unusable one reads as no id.
func idOf(raw []byte) jsonrpc.ID {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return jsonrpc.ID{}
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		return jsonrpc.ID{}
	}
	return id
}

// requestID finds a message's id from as much of it as there is.
func requestID(b []byte) jsonrpc.ID {
	raw, ok := jsonscan.Find(b, "id")
	if !ok {
		return jsonrpc.ID{}
	}
	return idOf(raw)
}

// largeArgs holds the large string arguments the stdio transport took
// out of tools/call requests, each under a token that stands in the
// message for it, until the tool takes it (restore) or the request is
// answered. Tokens carry a random prefix, so a client cannot name one.
type largeArgs struct {
	prefix string // set by newLargeArgs, read only

	mu    sync.Mutex // protects the following
	next  int
	texts map[string]largeText    // token -> text
	byID  map[jsonrpc.ID][]string // request -> its tokens
}

func newLargeArgs() *largeArgs {
	nonce := make([]byte, 16)
	rand.Read(nonce)
	return &largeArgs{
		prefix: "draftfs-large-argument:" + hex.EncodeToString(nonce) + ":",
		texts:  map[string]largeText{},
		byID:   map[jsonrpc.ID][]string{},
	}
}

// take decodes the strings at spans of line and returns line with a
// token in place of each, and the tokens.
func (l *largeArgs) take(line []byte, spans []span) ([]byte, []string, error) {
	var out bytes.Buffer
	tokens := make([]string, 0, len(spans))
	texts := make([]largeText, 0, len(spans))
	last := 0
	for _, s := range spans {
		t := json.NewTokenizer(line[s.start:s.end])
		if !t.Next() {
			return nil, nil, t.Err
		}
		text := t.String() // a copy when it had escapes, else part of line
		if len(text) == s.end-s.start-2 {
			text = bytes.Clone(text)
		}
		l.mu.Lock()
		token := fmt.Sprintf("%s%d", l.prefix, l.next)
		l.next++
		l.mu.Unlock()
		out.Write(line[last:s.start])
		out.WriteString(`"` + token + `"`)
		last = s.end
		tokens, texts = append(tokens, token), append(texts, text)
	}
	out.Write(line[last:])
	l.mu.Lock()
	for i, token := range tokens {
		l.texts[token] = texts[i]
	}
	l.mu.Unlock()
	return out.Bytes(), tokens, nil
}

// attach files tokens under the request that carries them.
func (l *largeArgs) attach(id jsonrpc.ID, tokens []string) {
	if len(tokens) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byID[id] = append(l.byID[id], tokens...)
}

// answered lets go of what the request id still holds.
func (l *largeArgs) answered(id jsonrpc.ID) {
	l.mu.Lock()
	tokens := l.byID[id]
	delete(l.byID, id)
	l.mu.Unlock()
	l.drop(tokens)
}

func (l *largeArgs) drop(tokens []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range tokens {
		delete(l.texts, t)
	}
}

// largeText is a large string argument, as bytes: a tool that writes it
// takes it as it is (args.text), without a copy.
type largeText []byte

// restore puts back, in a tool's arguments, the texts their tokens stand
// for; each is handed out once.
func (l *largeArgs) restore(a args) {
	for name, v := range a {
		s, ok := v.(string)
		if !ok || !strings.HasPrefix(s, l.prefix) {
			continue
		}
		l.mu.Lock()
		text, ok := l.texts[s]
		delete(l.texts, s)
		l.mu.Unlock()
		if ok {
			a[name] = text
		}
	}
}
