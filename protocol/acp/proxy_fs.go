package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
)

// The fs requests of the agent that the proxy answers itself, from the
// merged view or by reading through the editor.

// serve answers an fs request of the agent on its own goroutine, after
// the fs requests that came before it.
func (p *proxy) serve(m *message) {
	id, method, params := bytes.Clone(m.id), m.method, bytes.Clone(m.params)
	ctx, cancel := context.WithCancel(context.Background())
	k := idKey(id)
	done := make(chan struct{})
	p.mu.Lock()
	p.serving[k] = cancel
	prev := p.lastServed
	p.lastServed = done
	h := p.fsPlain
	if p.caps.readTextFile {
		h = p.fsThrough
	}
	p.mu.Unlock()
	p.served.Add(1)
	go func() {
		defer p.served.Done()
		defer close(done)
		defer cancel()
		select {
		case <-prev:
		case <-ctx.Done():
			p.respond(k, id, nil, rpcError(ctx.Err(), ""))
			<-prev
			return
		}
		buf := resultBuffers.Get().(*[]byte)
		result, rerr := h.serve(ctx, method, params, *buf)
		p.respond(k, id, result, rerr)
		if rerr == nil && cap(result) <= maxPooled {
			*buf = result[:0]
		}
		resultBuffers.Put(buf)
	}()
}

// resultBuffers hold encoded results between fs requests: a read of a
// large file would otherwise allocate (and the collector clear) its size
// again for every request. Buffers over maxPooled are left to the
// collector.
var resultBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooled = 4 << 20

// respond answers a served request. The request stops being one the
// proxy serves first, so that a cancellation the agent sends after the
// answer is passed on like any other (the editor ignores it).
func (p *proxy) respond(k string, id, result []byte, rerr *jsonrpc2.Error) {
	p.mu.Lock()
	delete(p.serving, k)
	p.mu.Unlock()
	if rerr != nil {
		p.agent.write(errorLine(id, rerr))
		return
	}
	p.agent.write([]byte(`{"jsonrpc":"2.0","id":`), id, []byte(`,"result":`), result, []byte(`}`))
}

// cancelServed cancels the fs request a $/cancel_request names, when the
// proxy is the one answering it; the editor never saw that request.
func (p *proxy) cancelServed(params []byte) bool {
	id, ok := member(params, "requestId")
	if !ok {
		return false
	}
	p.mu.Lock()
	cancel, ok := p.serving[idKey(id)]
	p.mu.Unlock()
	if ok {
		cancel()
	}
	return ok
}

// readThrough asks the editor to read a file, with the agent's params,
// under an id of the proxy's own.
func (p *proxy) readThrough(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	p.mu.Lock()
	if p.editorGone {
		p.mu.Unlock()
		return nil, errEditorGone
	}
	p.nextID++
	id := strconv.AppendQuote(nil, p.idPrefix+strconv.FormatUint(p.nextID, 10))
	ch := make(chan reply, 1)
	k := idKey(id)
	p.asked[k] = ch
	p.mu.Unlock()
	if err := p.editor.write([]byte(`{"jsonrpc":"2.0","id":`), id, []byte(`,"method":"fs/read_text_file","params":`), params, []byte(`}`)); err != nil {
		p.forget(k)
		return nil, err
	}
	select {
	case r, ok := <-ch:
		switch {
		case !ok:
			return nil, errEditorGone
		case r.err != nil:
			return nil, fmt.Errorf("the editor could not read the file: %s", r.err)
		}
		return r.result, nil
	case <-ctx.Done():
		p.forget(k)
		p.editor.write([]byte(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":`), id, []byte(`}}`))
		return nil, ctx.Err()
	}
}

func (p *proxy) forget(k string) {
	p.mu.Lock()
	delete(p.asked, k)
	p.mu.Unlock()
}

// answerAsked delivers the editor's answer to a request of the proxy,
// and reports whether the answer was for the proxy: a late answer to a
// request it cancelled is dropped too, never passed to the agent.
func (p *proxy) answerAsked(m *message) bool {
	id, ok := jsonString(m.id)
	if !ok || !strings.HasPrefix(id, p.idPrefix) {
		return false
	}
	k := idKey(m.id)
	p.mu.Lock()
	ch, waiting := p.asked[k]
	delete(p.asked, k)
	p.mu.Unlock()
	if waiting {
		ch <- reply{result: bytes.Clone(m.result), err: bytes.Clone(m.err)}
	}
	return true
}

// stopServing cancels the fs requests still being answered and waits
// for them.
func (p *proxy) stopServing() {
	p.mu.Lock()
	for _, cancel := range p.serving {
		cancel()
	}
	p.mu.Unlock()
	p.served.Wait()
}
