package mcp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/draftfs/draftfs/overlay/beneath"
)

// Files and directories of the allowed directories are resources with
// file:// URIs. A client may subscribe to one: any change in the merged
// view at it or below it (an editor keystroke pushed to the buffers,
// another agent's write, a commit or discard) sends
// notifications/resources/updated with the subscribed URI.

func (s *Server) addResources() {
	s.sdk.AddResourceTemplate(&sdk.ResourceTemplate{
		Name:        "file",
		Title:       "Files of the merged view",
		Description: "A file or directory as the agent sees it: the draft over the user's unsaved editor text over the disk. Directories read as a listing.",
		URITemplate: "file:///{+path}",
	}, s.readResource)
}

// resourceTarget validates a resource URI as a path; a bad one is an
// invalid-params error.
func (s *Server) resourceTarget(uri string) (target, error) {
	p, err := pathOfURI(uri)
	if err != nil {
		return target{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("resource %s: %v", uri, err)}
	}
	t, err := s.validate(p)
	if err != nil {
		return target{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	return t, nil
}

// resourceError is a failed read as a JSON-RPC error with its message.
func resourceError(err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

func (s *Server) readResource(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	t, err := s.resourceTarget(uri)
	if err != nil {
		return nil, err
	}
	info, err := s.f.Stat(t.key)
	if err != nil {
		if errnoOf(err) == syscall.ENOENT {
			return nil, sdk.ResourceNotFoundError(uri)
		}
		return nil, resourceError(fsError(err, "stat", t.abs))
	}
	if info.IsDir() {
		ents, err := s.readDir(t)
		if err != nil {
			return nil, resourceError(err)
		}
		lines := make([]string, len(ents))
		for i, e := range ents {
			lines[i] = dirOrFile(e) + " " + e.Name
		}
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: strings.Join(lines, "\n")}}}, nil
	}
	b, err := s.readFile(t)
	if err != nil {
		return nil, resourceError(err)
	}
	c := &sdk.ResourceContents{URI: uri, MIMEType: mimeTypeOf(t.abs)}
	if !isBinary(b) && utf8.Valid(b) {
		if c.MIMEType == "application/octet-stream" {
			c.MIMEType = "text/plain"
		}
		c.Text = string(b)
	} else {
		c.Blob = b
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{c}}, nil
}

// subscriptions are the resources clients subscribed to, and the changes
// not yet told.
type subscriptions struct {
	wake chan struct{} // buffered: a change is pending

	mu      sync.Mutex // mu protects the following
	byURI   map[string]*subscription
	pending map[string]bool // keys changed since the last delivery
}

type subscription struct {
	key      string
	sessions map[*sdk.ServerSession]bool
}

func (ss *subscriptions) init() {
	ss.wake = make(chan struct{}, 1)
	ss.byURI = map[string]*subscription{}
	ss.pending = map[string]bool{}
}

func (s *Server) subscribe(_ context.Context, req *sdk.SubscribeRequest) error {
	t, err := s.resourceTarget(req.Params.URI)
	if err != nil {
		return err
	}
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	sub := s.subs.byURI[req.Params.URI]
	if sub == nil {
		sub = &subscription{key: t.key, sessions: map[*sdk.ServerSession]bool{}}
		s.subs.byURI[req.Params.URI] = sub
	}
	sub.sessions[req.Session] = true
	return nil
}

func (s *Server) unsubscribe(_ context.Context, req *sdk.UnsubscribeRequest) error {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	if sub := s.subs.byURI[req.Params.URI]; sub != nil {
		delete(sub.sessions, req.Session)
		if len(sub.sessions) == 0 {
			delete(s.subs.byURI, req.Params.URI)
		}
	}
	return nil
}

// changed records a change to the merged view; it never blocks (it runs
// on the engine's change feed).
func (ss *subscriptions) changed(key string) {
	ss.mu.Lock()
	if len(ss.byURI) > 0 {
		ss.pending[key] = true
	}
	ss.mu.Unlock()
	select {
	case ss.wake <- struct{}{}:
	default:
	}
}

// due takes the pending changes and returns the subscribed URIs they
// touch. A change at the root ("") touches them all: it also stands for
// changes lost when the feed overflowed.
func (ss *subscriptions) due() []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var uris []string
	for uri, sub := range ss.byURI {
		for key := range ss.pending {
			if key == "" || beneath.Within(key, sub.key) {
				uris = append(uris, uri)
				break
			}
		}
	}
	clear(ss.pending)
	return uris
}

// watch follows the merged view's changes and tells subscribers, until
// the returned function is called.
func (s *Server) watch() (stop func()) {
	stopWatch := s.f.Watch(s.subs.changed)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-s.subs.wake:
			}
			for _, uri := range s.subs.due() {
				// Delivery failures (a client gone) are the SDK's to log.
				_ = s.sdk.ResourceUpdated(context.Background(), &sdk.ResourceUpdatedNotificationParams{URI: uri})
			}
		}
	}()
	return func() {
		stopWatch()
		close(done)
		<-finished
	}
}
