package control

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// Dispatch: each request to its method, in order or concurrently, and
// its answer or, for a notification, what a failure asks of the client.

// settleTimeout bounds how long a request waits for the mounts to
// apply what it changed (see overlay.Workspace.Settle).
const settleTimeout = 2 * time.Second

// Handle implements jsonrpc2.Handler. Ordered methods (initialize and
// buffer/*) run here, on the reading goroutine, so a connection's buffer
// changes apply in arrival order; the others run concurrently, at most
// maxAsync at a time.
func (cn *conn) Handle(ctx context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	<-cn.ready
	cn.st.unpark(req)
	m, ok := methods[req.Method]
	if !ok {
		if !req.Notif {
			c.ReplyWithError(ctx, req.ID, &jsonrpc2.Error{
				Code:    jsonrpc2.CodeMethodNotFound,
				Message: fmt.Sprintf("method not found: %q is not a draftfs control method", req.Method),
			})
		}
		return
	}
	if m.user && cn.agent {
		cn.refuseAgent(ctx, req)
		return
	}
	if m.ordered {
		cn.run(ctx, m, req)
		return
	}
	select {
	case cn.sem <- struct{}{}:
	case <-cn.done:
		return
	}
	if !cn.s.track() {
		<-cn.sem
		return // closing
	}
	go func() {
		defer cn.s.wg.Done()
		defer func() { <-cn.sem }()
		cn.run(ctx, m, req)
	}()
}

// refuseAgent answers a user's method sent through the agent socket.
func (cn *conn) refuseAgent(ctx context.Context, req *jsonrpc2.Request) {
	cn.s.opts.Logf("control: refused %s from inside draftfs run or acp", req.Method)
	if req.Notif {
		return
	}
	cn.rpc.ReplyWithError(ctx, req.ID, refusedToAgent(req.Method))
}

// run calls a method's handler and answers. A panicking handler is a
// bug: it is logged and answered as an internal error, and then
// ServerOptions.Fatal is called.
func (cn *conn) run(ctx context.Context, m method, req *jsonrpc2.Request) {
	var res any
	var err error
	var panicked error
	end := func() {}
	if m.heavy && cn.s.opts.Heavy != nil {
		end = cn.s.opts.Heavy(req.Method)
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				cn.s.opts.Logf("control: panic in %s: %v\n%s", req.Method, p, debug.Stack())
				panicked = fmt.Errorf("internal error in %s: %v", req.Method, p)
				err = &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: panicked.Error()}
			}
		}()
		res, err = m.fn(cn, ctx, req)
	}()
	if panicked != nil {
		end()
		if !req.Notif {
			cn.rpc.ReplyWithError(ctx, req.ID, toRPC(err))
		}
		if cn.s.opts.Fatal != nil {
			cn.s.opts.Fatal(panicked)
		}
		return
	}
	// What the request changed is what the mounts show once it is
	// answered.
	if !cn.s.ws.Settle(settleTimeout) {
		cn.s.opts.Logf("control: %s: a mount took over %v to apply the change; reads through it may lag", req.Method, settleTimeout)
	}
	end()
	if req.Notif {
		if err != nil {
			cn.notificationFailed(req, err)
		}
		return
	}
	if err != nil {
		cn.rpc.ReplyWithError(ctx, req.ID, toRPC(err))
		return
	}
	cn.reply(ctx, req.ID, res)
}

// notificationFailed tells the client about a buffer change it sent as
// a notification that failed, so it can resend the full text; other
// failed notifications are only logged.
func (cn *conn) notificationFailed(req *jsonrpc2.Request, err error) {
	var p bufferParams
	if methods[req.Method].buffer && decode(req, &p) == nil && p.Path != "" {
		cn.rpc.Notify(cn.s.ctx, "buffer/resync", resyncNotice{Path: p.Path, Message: toRPC(err).Message})
		return
	}
	cn.s.opts.Logf("control: notification %s: %v", req.Method, err)
}
