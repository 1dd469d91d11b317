package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/agent"
)

// env is a server over the fixture tree, served in this process to a Go
// SDK client.
type env struct {
	t       testing.TB
	root    string
	ws      *overlay.Workspace
	d       *overlay.Draft
	f       agent.Files
	srv     *Server
	client  *sdk.Client
	cs      *sdk.ClientSession
	updates chan string // URIs of notifications/resources/updated
}

// envConfig is what envOptions change before the server starts.
type envConfig struct {
	opts   Options
	client *sdk.ClientOptions
	roots  []string // URIs; the client declares roots when set
	// protocol is the version the client asks for; "" is the SDK's
	// latest (stateless, no initialize handshake).
	protocol string
}

func withProtocol(version string) envOption {
	return func(c *envConfig) { c.protocol = version }
}

// legacyProtocol is the version of the initialize handshake, which the
// TypeScript SDK and most clients speak; roots need it.
const legacyProtocol = "2025-11-25"

type envOption func(*envConfig)

func withOptions(fn func(*Options)) envOption {
	return func(c *envConfig) { fn(&c.opts) }
}

func withRoots(uris ...string) envOption {
	return func(c *envConfig) {
		c.roots = uris
		c.protocol = legacyProtocol
		c.client.Capabilities = &sdk.ClientCapabilities{RootsV2: &sdk.RootCapabilities{ListChanged: true}}
	}
}

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "tree")
	makeTree(t, root)
	ws, d, f := openView(t, root, filepath.Join(base, "state"))
	return serveEnv(t, root, ws, d, f, opts...)
}

// serveEnv serves f and connects a client to it.
func serveEnv(t testing.TB, root string, ws *overlay.Workspace, d *overlay.Draft, f agent.Files, opts ...envOption) *env {
	t.Helper()
	e := &env{t: t, root: root, ws: ws, d: d, f: f, updates: make(chan string, 100)}
	c := envConfig{opts: Options{Version: "test"}, client: &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{},
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			e.updates <- r.Params.URI
		},
	}}
	for _, fn := range opts {
		fn(&c)
	}
	srv, err := New(f, c.opts)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	ct, st := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, st) }()
	e.client = sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, c.client)
	for _, uri := range c.roots {
		e.client.AddRoots(&sdk.Root{URI: uri})
	}
	cs, err := e.client.Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: c.protocol})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	e.cs = cs
	t.Cleanup(func() {
		cs.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the server did not stop")
		}
	})
	return e
}

// res is a tool call's outcome.
type res struct {
	text       string
	isError    bool
	structured map[string]any
	content    []sdk.Content
}

func (e *env) call(name string, args map[string]any) res {
	e.t.Helper()
	r, err := e.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		e.t.Fatalf("%s: %v", name, err)
	}
	out := res{isError: r.IsError, content: r.Content}
	if len(r.Content) > 0 {
		if tc, ok := r.Content[0].(*sdk.TextContent); ok {
			out.text = tc.Text
		}
	}
	if r.StructuredContent != nil {
		b, _ := json.Marshal(r.StructuredContent)
		json.Unmarshal(b, &out.structured)
	}
	return out
}

// ok calls a tool that must succeed and returns its text.
func (e *env) ok(name string, args map[string]any) string {
	e.t.Helper()
	r := e.call(name, args)
	if r.isError {
		e.t.Fatalf("%s %v: error %q", name, args, r.text)
	}
	return r.text
}

// fails calls a tool that must fail with a message containing want.
func (e *env) fails(name string, args map[string]any, want string) string {
	e.t.Helper()
	r := e.call(name, args)
	if !r.isError {
		e.t.Fatalf("%s %v: succeeded with %q, want an error containing %q", name, args, r.text, want)
	}
	if !strings.Contains(r.text, want) {
		e.t.Errorf("%s %v: error %q, want it to contain %q", name, args, r.text, want)
	}
	return r.text
}

func (e *env) abs(rel string) string { return filepath.Join(e.root, rel) }

// disk reads a file from the disk, not the view.
func (e *env) disk(rel string) string {
	b, err := os.ReadFile(e.abs(rel))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// view reads a file of the merged view.
func (e *env) view(rel string) string {
	b, err := e.f.ReadFile(rel, 0)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func m(kv ...any) map[string]any {
	out := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}
