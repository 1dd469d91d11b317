package control

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// TestHandlerPanicIsFatal: a handler that panics is answered as an
// internal error, and then the server's Fatal hook is called (a daemon
// stops there rather than serve on with locks the panic may have left
// held).
func TestHandlerPanicIsFatal(t *testing.T) {
	e := newEnv(t)
	fatal := make(chan error, 1)
	e.srv.opts.Fatal = func(err error) { fatal <- err }
	methods["test/panic"] = method{fn: func(*conn, context.Context, *jsonrpc2.Request) (any, error) { panic("boom") }}
	t.Cleanup(func() { delete(methods, "test/panic") })
	r := e.raw(t)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"draft/status"}`)
	if rep := r.answer(); rep.Error != nil {
		t.Fatalf("status: %v", rep.Error)
	}
	select {
	case err := <-fatal:
		t.Fatalf("Fatal called for a request that did not panic: %v", err)
	default:
	}
	r.send(`{"jsonrpc":"2.0","id":2,"method":"test/panic"}`)
	if rep := r.answer(); rep.Error == nil || !strings.Contains(rep.Error.Message, "internal error in test/panic: boom") {
		t.Fatalf("answer to a panicking handler: %+v", rep)
	}
	select {
	case err := <-fatal:
		if !strings.Contains(err.Error(), "boom") {
			t.Errorf("Fatal(%v), want the panic's value", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Fatal not called after a handler panicked")
	}
	e.mu.Lock()
	e.logs = nil // the panic logged is this test's
	e.mu.Unlock()
}
