package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool handler that panics is a bug, which may have left the draft
// locked (a panic inside the engine) so that every later call would wait
// for ever. The call is answered with a tool error naming the bug, and
// once that answer is sent, Options.Fatal is called (draftfs mcp exits).
// Without Fatal the server serves on.

// bug is a panic waiting for its answer to be sent.
type bug struct {
	err error
	id  []byte // in the answer's text, which is how Write knows it
}

// bugs tracks the panics of one server.
type bugs struct {
	fatal   func(error)
	pending atomic.Pointer[bug]
	once    sync.Once
}

// caught turns the panic p of a call of tool into the call's result, and
// logs it with the stack.
func (s *Server) caught(tool string, p any) *sdk.CallToolResult {
	fmt.Fprintf(s.log, "draftfs mcp: panic in %s: %v\n%s", tool, p, debug.Stack())
	err := fmt.Errorf("internal error in %s: %v", tool, p)
	if s.bugs.fatal == nil {
		return errorResult(err.Error())
	}
	id := make([]byte, 4)
	rand.Read(id)
	b := &bug{err: err, id: []byte("bug " + hex.EncodeToString(id))}
	s.bugs.pending.CompareAndSwap(nil, b)
	return errorResult(fmt.Sprintf("%v (%s: draftfs mcp stops, as it may have left the draft locked; "+
		"nothing written is lost, and the next draftfs command recovers the draft; restart the MCP server)", b.err, b.id))
}

// bugConn is a connection that calls Options.Fatal once the answer to a
// call whose handler panicked is written.
type bugConn struct {
	sdk.Connection
	b *bugs
}

// Write implements sdk.Connection.
func (c bugConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if b := c.b.pending.Load(); b != nil {
		if r, ok := msg.(*jsonrpc.Response); ok && bytes.Contains(r.Result, b.id) {
			c.b.once.Do(func() { c.b.fatal(b.err) })
		}
	}
	return err
}

// bugTransport wraps a transport's connection in a bugConn.
type bugTransport struct {
	sdk.Transport
	b *bugs
}

// Connect implements sdk.Transport.
func (t bugTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil || t.b.fatal == nil {
		return c, err
	}
	return bugConn{c, t.b}, nil
}
