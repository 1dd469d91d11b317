package mcp

import (
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSubscriptions: an editor keystroke, another writer's change and a
// discard notify subscribers of the file and of directories above it.
// The client speaks the initialize handshake, as the TypeScript SDK
// does: with go-sdk v1.8.0's stateless protocol (2026-07-28) the
// updates reach its own client only some of the time.
func TestSubscriptions(t *testing.T) {
	e := newEnv(t, withProtocol(legacyProtocol))
	uri := fileURL(e.abs("a.txt"))
	dirURI := fileURL(e.abs("sub"))
	for _, u := range []string{uri, dirURI} {
		if err := e.cs.Subscribe(t.Context(), &sdk.SubscribeParams{URI: u}); err != nil {
			t.Fatal(err)
		}
	}
	// One change may come as several events (create, then write), so a
	// late repeat of the previous update is let through.
	last := ""
	expect := func(what string, want string) {
		t.Helper()
		for {
			select {
			case got := <-e.updates:
				if got == want {
					last = want
					return
				}
				if got != last {
					t.Errorf("%s: update for %s, want %s", what, got, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: no notifications/resources/updated for %s", what, want)
			}
		}
	}
	if err := e.ws.Buffers().Open("a.txt", 1, []byte("typed\n")); err != nil {
		t.Fatal(err)
	}
	expect("editor keystroke", uri)
	r, err := e.cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: uri})
	if err != nil || r.Contents[0].Text != "typed\n" {
		t.Errorf("read %s: %v %v", uri, r, err)
	}
	if err := e.f.WriteFile("sub/deep/other.txt", []byte("another agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	expect("another agent's write", dirURI)
	e.ok("write_file", m("path", "a.txt", "content", "agent\n"))
	expect("this agent's write", uri)
	if err := e.f.Discard([]string{"a.txt"}); err != nil {
		t.Fatal(err)
	}
	expect("discard", uri)
	if err := e.cs.Unsubscribe(t.Context(), &sdk.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	e.ok("write_file", m("path", "a.txt", "content", "again\n"))
	e.ok("write_file", m("path", "sub/y.ts", "content", "y\n"))
	expect("write after unsubscribing a.txt", dirURI)
	for {
		select {
		case u := <-e.updates:
			if u != last {
				t.Errorf("unexpected update for %s", u)
			}
			continue
		case <-time.After(200 * time.Millisecond):
		}
		break
	}
	if err := e.cs.Subscribe(t.Context(), &sdk.SubscribeParams{URI: fileURL("/etc/passwd")}); err == nil {
		t.Errorf("subscribed to /etc/passwd")
	}
	if _, err := e.cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: fileURL(e.abs("missing"))}); err == nil || !strings.Contains(err.Error(), "Resource not found") {
		t.Errorf("missing resource: %v", err)
	}
}
