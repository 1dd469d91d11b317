package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/draftfs/draftfs/buffers"
)

// TestBufferOrder sends a thousand incremental changes as notifications
// and checks they applied in order.
func TestBufferOrder(t *testing.T) {
	e := newEnv(t)
	r := e.raw(t)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"t"},"positionEncodings":["utf-8"]}}`)
	if m := r.answer(); m.Error != nil || !strings.Contains(string(m.Result), `"positionEncoding":"utf-8"`) {
		t.Fatalf("initialize: %s %+v", m.Result, m.Error)
	}
	r.send(`{"jsonrpc":"2.0","method":"buffer/didOpen","params":{"path":"f.txt","version":1,"text":""}}`)
	var want strings.Builder
	for i := 2; i <= 1001; i++ {
		ch := string(rune('a' + i%26))
		want.WriteString(ch)
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"buffer/didChange","params":{"path":"%s/f.txt","version":%d,"changes":[{"range":{"start":{"line":0,"character":%d},"end":{"line":0,"character":%d}},"text":"%s"}],"length":%d}}`,
			e.root, i, i-2, i-2, ch, i-1))
	}
	r.send(`{"jsonrpc":"2.0","id":2,"method":"draft/read","params":{"path":"f.txt"}}`)
	m := r.answer()
	var res readResult
	if err := json.Unmarshal(m.Result, &res); err != nil || res.Text != want.String() {
		t.Fatalf("read %q (%v), want %q", res.Text, m.Error, want.String())
	}
	if snap, _ := e.ws.Buffers().Get("f.txt"); snap.Version != 1001 {
		t.Fatalf("version %d", snap.Version)
	}
}

// TestBufferEncodings: ranges count UTF-16 units unless UTF-8 was
// negotiated.
func TestBufferEncodings(t *testing.T) {
	for _, enc := range []string{"utf-16", "utf-8"} {
		t.Run(enc, func(t *testing.T) {
			e := newEnv(t)
			c := e.client(t)
			if res, err := c.Initialize("", "", enc); err != nil || res.PositionEncoding != enc {
				t.Fatalf("initialize: %+v %v", res, err)
			}
			if err := c.OpenBuffer("u.txt", 1, "😀x\n"); err != nil {
				t.Fatal(err)
			}
			at := 2 // after the emoji, in UTF-16 units
			if enc == "utf-8" {
				at = 4
			}
			ok, err := c.ChangeBuffer("u.txt", 2, []buffers.Edit{{
				Range: buffers.Range{Start: buffers.Position{Line: 0, Character: at}, End: buffers.Position{Line: 0, Character: at + 1}}, Text: "y"}}, -1)
			if err != nil || !ok {
				t.Fatalf("change: %v %v", ok, err)
			}
			if snap, _ := e.ws.Buffers().Get("u.txt"); string(snap.Text) != "😀y\n" {
				t.Fatalf("text %q", snap.Text)
			}
		})
	}
}

func TestBufferResync(t *testing.T) {
	e := newEnv(t)
	c := e.client(t)
	if err := c.OpenBuffer("a", 1, "abc"); err != nil {
		t.Fatal(err)
	}
	length := int64(99)
	_, err := c.ChangeBuffer("a", 2, []buffers.Edit{{Range: buffers.Range{End: buffers.Position{Line: 0, Character: 1}}, Text: ""}}, length)
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != CodeResync || !errors.Is(err, buffers.ErrResync) {
		t.Fatalf("got %v, want a resync error", err)
	}
	var stale didChangeResult // a whole-text change, which the Client does not send
	if err := c.call(context.Background(), "buffer/didChange", didChangeParams{Path: "a", Version: 1, Text: ptr("stale")}, &stale); stale.Applied || err != nil {
		t.Fatalf("stale version: applied %v, %v", stale.Applied, err)
	}
	_, err = c.ChangeBuffer("a", 3, []buffers.Edit{{Range: buffers.Range{Start: buffers.Position{Line: 0, Character: 2}, End: buffers.Position{Line: 0, Character: 1}}}}, -1)
	if !errors.Is(err, buffers.ErrBadRange) {
		t.Fatalf("backwards range: %v", err)
	}
	if snap, _ := e.ws.Buffers().Get("a"); string(snap.Text) != "abc" || snap.Version != 1 {
		t.Fatalf("buffer changed: %q v%d", snap.Text, snap.Version)
	}

	// Sent as a notification, the failure comes back as buffer/resync.
	r := e.raw(t)
	r.send(`{"jsonrpc":"2.0","method":"buffer/didChange","params":{"path":"a","version":5,"changes":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":0}},"text":"z"}],"length":1}}`)
	m := r.next()
	if m.Method != "buffer/resync" || !strings.Contains(string(m.Params), `"path":"a"`) {
		t.Fatalf("got %s %s, want buffer/resync", m.Method, m.Params)
	}
}

func ptr[T any](v T) *T { return &v }

// TestEditorBuffersCloseWithConnection: an editor's unsaved text goes
// when its connection does; a script's buffer stays.
func TestEditorBuffersCloseWithConnection(t *testing.T) {
	e := newEnv(t)
	editor := e.raw(t)
	editor.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"nvim"}}}`)
	editor.answer()
	editor.send(`{"jsonrpc":"2.0","id":2,"method":"buffer/didOpen","params":{"path":"ed.txt","version":1,"text":"typing"}}`)
	editor.answer()
	script := e.raw(t)
	script.send(`{"jsonrpc":"2.0","id":1,"method":"buffer/didOpen","params":{"path":"script.txt","version":1,"text":"kept"}}`)
	script.answer()
	script.c.Close()
	editor.c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, ed := e.ws.Buffers().Get("ed.txt")
		_, sc := e.ws.Buffers().Get("script.txt")
		if !ed && sc {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after both connections ended: editor's buffer open %v (want false), script's %v (want true)", ed, sc)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSharedBufferOutlivesOneEditor: a buffer another editor changed
// since stays when the first editor's connection ends.
func TestSharedBufferOutlivesOneEditor(t *testing.T) {
	e := newEnv(t)
	a, b := e.raw(t), e.raw(t)
	for _, r := range []*raw{a, b} {
		r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"nvim"}}}`)
		r.answer()
	}
	a.send(`{"jsonrpc":"2.0","id":2,"method":"buffer/didOpen","params":{"path":"s.txt","version":1,"text":"a"}}`)
	a.answer()
	b.send(`{"jsonrpc":"2.0","id":2,"method":"buffer/didChange","params":{"path":"s.txt","version":2,"text":"ab"}}`)
	b.answer()
	a.c.Close()
	time.Sleep(100 * time.Millisecond)
	if snap, ok := e.ws.Buffers().Get("s.txt"); !ok || string(snap.Text) != "ab" {
		t.Fatalf("after the first editor left: %q %v", snap.Text, ok)
	}
	b.c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := e.ws.Buffers().Get("s.txt"); !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the buffer outlived its last editor")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
