package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/draftfs/draftfs/overlay/agent"
	"github.com/draftfs/draftfs/overlay/beneath"
)

// ACP method names the proxy and the handlers deal with.
const (
	MethodReadTextFile   = "fs/read_text_file"
	MethodWriteTextFile  = "fs/write_text_file"
	MethodInitialize     = "initialize"
	MethodSessionNew     = "session/new"
	MethodSessionPrompt  = "session/prompt"
	MethodSessionLoad    = "session/load"
	MethodSessionResume  = "session/resume"
	MethodSessionFork    = "session/fork"
	MethodTerminalCreate = "terminal/create"
	MethodCancelRequest  = "$/cancel_request"
)

// Root is one directory an ACP session may touch and the merged view
// that serves it.
type Root struct {
	// Dir is absolute and clean, as the session names it.
	Dir string
	// Files is the merged view of the workspace holding Dir.
	Files agent.Files
	// Workspace is the root of Files as the session names it, when that
	// differs from Files.Root() (a path through a symlink); "" means
	// Files.Root(). Paths are resolved relative to it.
	Workspace string
}

// Session is what an ACP session's file requests may reach: its cwd and
// additionalDirectories, in that order.
type Session struct {
	Roots []Root
}

// FS answers the ACP client methods fs/read_text_file and
// fs/write_text_file from merged views; see the package doc for their
// semantics. It is a jsonrpc2.Handler and is also called directly by the
// proxy. Its fields are read only once it serves.
type FS struct {
	// Session returns the session a request names, nil when there is no
	// such session, or an error when its views cannot be opened.
	Session func(id string) (*Session, error)
	// ReadThrough, when set, is asked first to read a file that exists
	// in the merged view without a draft entry (the editor, which knows
	// unsaved buffers draftfs may not); it gets the request's params as
	// sent and returns a result to pass on as it is. When it fails, the
	// merged view answers. On a jsonrpc2 connection, a ReadThrough that
	// waits for that same connection deadlocks unless the handler is
	// wrapped in jsonrpc2.AsyncHandler.
	ReadThrough func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
}

var _ jsonrpc2.Handler = (*FS)(nil)

// Handle implements jsonrpc2.Handler: fs/read_text_file and
// fs/write_text_file, in arrival order; any other method is answered
// "method not found".
func (h *FS) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if req.Notif {
		return
	}
	var params json.RawMessage
	if req.Params != nil {
		params = *req.Params
	}
	result, rerr := h.Serve(ctx, req.Method, params)
	if rerr != nil {
		conn.ReplyWithError(ctx, req.ID, rerr)
		return
	}
	conn.Reply(ctx, req.ID, result)
}

// Serve answers one request: the encoded result, or the error to send.
func (h *FS) Serve(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *jsonrpc2.Error) {
	return h.serve(ctx, method, params, nil)
}

// serve is Serve encoding a read's result into buf (appended to from
// its start), so that callers may reuse buffers.
func (h *FS) serve(ctx context.Context, method string, params json.RawMessage, buf []byte) (json.RawMessage, *jsonrpc2.Error) {
	switch method {
	case MethodReadTextFile:
		return h.read(ctx, params, buf)
	case MethodWriteTextFile:
		return h.write(ctx, params)
	}
	return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "Method not found: " + method}
}

type readParams struct {
	SessionID *string `json:"sessionId"`
	Path      *string `json:"path"`
	Line      *int64  `json:"line"`
	Limit     *int64  `json:"limit"`
}

type writeParams struct {
	SessionID *string `json:"sessionId"`
	Path      *string `json:"path"`
	Content   *string `json:"content"`
}

// maxResult bounds an encoded result so that its response, with the
// envelope and id, fits one message.
const maxResult = MaxMessage - 4<<10

func (h *FS) read(ctx context.Context, raw json.RawMessage, buf []byte) (json.RawMessage, *jsonrpc2.Error) {
	var p readParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, rpcError(err, "")
	}
	path := deref(p.Path)
	line, limit := int64(0), int64(-1)
	switch {
	case p.SessionID == nil || p.Path == nil:
		return nil, rpcError(&paramsError{"sessionId and path are required"}, path)
	case p.Line != nil && *p.Line < 0:
		return nil, rpcError(&paramsError{fmt.Sprintf("line %d: lines are numbered from 1", *p.Line)}, path)
	case p.Limit != nil && *p.Limit < 0:
		return nil, rpcError(&paramsError{fmt.Sprintf("limit %d: a limit is a number of lines, 0 or more", *p.Limit)}, path)
	}
	if p.Line != nil {
		line = *p.Line
	}
	if p.Limit != nil {
		limit = *p.Limit
	}
	f, key, err := h.resolve(*p.SessionID, path)
	if err != nil {
		return nil, rpcError(err, path)
	}
	if h.ReadThrough != nil && askEditor(f, key) {
		if res, err := h.ReadThrough(ctx, raw); err == nil {
			return res, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, rpcError(err, path)
		}
	}
	b, err := f.ReadFile(key, MaxFileSize)
	if err != nil {
		return nil, rpcError(err, path)
	}
	if err := checkText(key, b); err != nil {
		return nil, rpcError(err, path)
	}
	b, err = sliceLines(b, line, limit)
	if err != nil {
		return nil, rpcError(err, path)
	}
	// Room for a newline escape every 32 bytes, so that source text
	// rarely makes the buffer grow.
	out := slices.Grow(buf[:0], len(b)+len(b)/32+64)
	out = append(out, `{"content":`...)
	out = appendJSONString(out, b)
	out = append(out, '}')
	if len(out) > maxResult {
		return nil, rpcError(&textError{key: key, msg: fmt.Sprintf("encodes to %d bytes of JSON, over the %d MiB message limit: read it in pieces with line and limit", len(out), MaxMessage>>20)}, path)
	}
	return out, nil
}

// askEditor reports whether a read may go to the editor first: the path
// is a regular file in the merged view and the draft has no entry for
// it, so what the editor shows is what the agent should see. (A file
// reached through a directory the draft renamed has no entry of its
// own; the editor does not know it under its new path and the read falls
// back to the merged view.)
func askEditor(f agent.Files, key string) bool {
	fi, err := f.Stat(key)
	if err != nil || !fi.Mode.IsRegular() {
		return false
	}
	st, err := f.Status(key)
	return err == nil && len(st) == 0
}

func (h *FS) write(_ context.Context, raw json.RawMessage) (json.RawMessage, *jsonrpc2.Error) {
	var p writeParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, rpcError(err, "")
	}
	path := deref(p.Path)
	switch {
	case p.SessionID == nil || p.Path == nil || p.Content == nil:
		return nil, rpcError(&paramsError{"sessionId, path and content are required"}, path)
	case len(*p.Content) > MaxFileSize:
		return nil, rpcError(&paramsError{fmt.Sprintf("content is %d bytes, over the %d MiB draftfs accepts through ACP", len(*p.Content), MaxFileSize>>20)}, path)
	}
	f, key, err := h.resolve(*p.SessionID, path)
	if err != nil {
		return nil, rpcError(err, path)
	}
	if err := f.WriteFile(key, []byte(*p.Content), 0o644); err != nil {
		return nil, rpcError(err, path)
	}
	return json.RawMessage(`{}`), nil
}

// resolve finds the merged view and key of an agent's path: absolute,
// inside one of the session's directories (the deepest that holds it),
// and inside that view's workspace, also through symlinks.
func (h *FS) resolve(sessionID, path string) (agent.Files, string, error) {
	s, err := h.Session(sessionID)
	if err != nil {
		return nil, "", err
	}
	if s == nil {
		return nil, "", &sessionError{id: sessionID}
	}
	if !filepath.IsAbs(path) {
		return nil, "", &paramsError{fmt.Sprintf("path %q is not absolute: ACP paths are absolute", path)}
	}
	c := filepath.Clean(path)
	var root *Root
	for i := range s.Roots {
		r := &s.Roots[i]
		if beneath.Within(c, r.Dir) && (root == nil || len(r.Dir) > len(root.Dir)) {
			root = r
		}
	}
	if root == nil {
		return nil, "", &notFoundError{path: path, reason: "outside the session's directories (its cwd and additionalDirectories)"}
	}
	// The view resolves the path relative to its root, so that a
	// session naming the workspace through a symlink is served too.
	base := root.Workspace
	if base == "" {
		base = root.Files.Root()
	}
	p := c
	if rel, err := filepath.Rel(base, c); err == nil && filepath.IsLocal(rel) {
		p = rel
	}
	key, err := root.Files.Resolve(p)
	if err != nil {
		return nil, "", err
	}
	return root.Files, key, nil
}

func decodeParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return &paramsError{"params are missing"}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return &paramsError{err.Error()}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
