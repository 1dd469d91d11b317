package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/draftfs/draftfs/buffers"
	"github.com/draftfs/draftfs/overlay"
)

// Client talks to a draftfs daemon, or to a Server in this process over
// a pipe. Its methods may be called from several goroutines. Errors the
// daemon answers are *Error, which unwrap to the engine's own errors.
type Client struct {
	rpc    *jsonrpc2.Conn
	stream *stream

	mu       sync.Mutex // protects the following
	watchers map[int]func(ChangeNotice)
	nextW    int
	progress func(done, total int)
}

// Dial connects to the daemon listening on socket; the error wraps
// ErrNoDaemon when none is.
func Dial(socket string) (*Client, error) {
	c, err := dialSocket(socket)
	if err != nil {
		return nil, err
	}
	return NewClient(c), nil
}

// NewClient runs the protocol over rwc.
func NewClient(rwc io.ReadWriteCloser) *Client {
	c := &Client{watchers: map[int]func(ChangeNotice){}, stream: newStream(rwc, maxClientMessage, false)}
	c.rpc = jsonrpc2.NewConn(context.Background(), c.stream,
		jsonrpc2.HandlerWithError(c.handle), jsonrpc2.SetLogger(logger{func(string, ...any) {}}))
	return c
}

// Close ends the connection.
func (c *Client) Close() error {
	err := c.rpc.Close()
	if errors.Is(err, jsonrpc2.ErrClosed) {
		return nil
	}
	return err
}

// Done is closed when the connection ends.
func (c *Client) Done() <-chan struct{} { return c.rpc.DisconnectNotify() }

// call sends a request and decodes its result into result (nil: drop it).
func (c *Client) call(ctx context.Context, method string, params, result any) error {
	id := c.stream.await()
	defer c.stream.forget(id)
	err := c.rpc.Call(ctx, method, params, &awaitedResult{c.stream, id, result}, jsonrpc2.PickID(jsonrpc2.ID{Num: id}))
	if errors.Is(err, jsonrpc2.ErrClosed) {
		return fmt.Errorf("%s: %w (the draftfs daemon stopped or dropped the connection)", method, ErrDisconnected)
	}
	if err != nil {
		return fromRPC(err)
	}
	return nil
}

// callSpliced is call for params given as the pieces of their JSON,
// written as they are (stream.splice).
func (c *Client) callSpliced(ctx context.Context, method string, pieces [][]byte, result any) error {
	params, drop := c.stream.splice(pieces)
	defer drop()
	return c.call(ctx, method, params, result)
}

// ErrDisconnected: the connection to the daemon is gone.
var ErrDisconnected = errors.New("connection to the daemon lost")

// handle receives the daemon's notifications.
func (c *Client) handle(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	if req.Params == nil {
		return nil, nil
	}
	switch req.Method {
	case "draft/commitProgress":
		var p progressParams
		if json.Unmarshal(*req.Params, &p) == nil {
			c.mu.Lock()
			fn := c.progress
			c.mu.Unlock()
			if fn != nil {
				fn(p.Done, p.Total)
			}
		}
	case "draft/didChange":
		var n ChangeNotice
		if json.Unmarshal(*req.Params, &n) == nil {
			c.notify(n)
		}
	case "draft/didCommit", "draft/didDiscard":
		var n pathsNotice
		if json.Unmarshal(*req.Params, &n) == nil {
			change := string(overlay.ChangeCommit)
			if req.Method == "draft/didDiscard" {
				change = string(overlay.ChangeDiscard)
			}
			for _, p := range n.Paths {
				c.notify(ChangeNotice{Draft: n.Draft, Path: p, Change: change})
			}
		}
	}
	return nil, nil
}

func (c *Client) notify(n ChangeNotice) {
	c.mu.Lock()
	fns := make([]func(ChangeNotice), 0, len(c.watchers))
	for _, fn := range c.watchers {
		fns = append(fns, fn)
	}
	c.mu.Unlock()
	for _, fn := range fns {
		fn(n)
	}
}

// Watch calls fn with every change the daemon reports (after
// Initialize), until stop is called. Commits and discards come as one
// notice per path. fn runs on the connection's reading goroutine: it
// must not call the Client.
func (c *Client) Watch(fn func(ChangeNotice)) (stop func()) {
	c.mu.Lock()
	id := c.nextW
	c.nextW++
	c.watchers[id] = fn
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.watchers, id)
		c.mu.Unlock()
	}
}

// Initialize starts a session as the client name (and version, may be
// ""): the daemon then sends change notifications, and buffer ranges
// count in the first of encodings ("utf-8", "utf-16") the daemon can
// use (none: "utf-16", as in LSP).
func (c *Client) Initialize(name, version string, encodings ...string) (*InitializeResult, error) {
	p := initializeParams{ClientInfo: Implementation{Name: name, Version: version}, PositionEncodings: encodings}
	var res InitializeResult
	return &res, c.call(context.Background(), "initialize", p, &res)
}

// The draft argument of the methods below names a draft of the
// workspace; "" is the daemon's.

// Status lists the draft's changes at paths (none: all of them).
func (c *Client) Status(draft string, paths ...string) ([]overlay.StatusEntry, error) {
	var res []overlay.StatusEntry
	return res, c.call(context.Background(), "draft/status", pathsParams{Draft: draft, Paths: paths}, &res)
}

// StatusJSON is Status as the daemon encodes it, a JSON array of
// overlay.StatusEntry, not decoded: what status --json prints.
func (c *Client) StatusJSON(draft string, paths ...string) (json.RawMessage, error) {
	var res json.RawMessage
	return res, c.call(context.Background(), "draft/status", pathsParams{Draft: draft, Paths: paths}, &res)
}

// DiffOptions choose what Diff shows.
type DiffOptions struct {
	Paths []string // none: every change
	// Ignored gives the patches of what git ignores too.
	Ignored bool
	// Annotate says, for each hunk, which checkpoint last wrote it and
	// who (overlay.Annotation).
	Annotate bool
}

// Diff returns the draft's changes as unified diffs.
func (c *Client) Diff(draft string, o DiffOptions) ([]overlay.FileDiff, error) {
	p := pathsParams{Draft: draft, Paths: o.Paths, Ignored: o.Ignored, Annotate: o.Annotate}
	var res []overlay.FileDiff
	return res, c.call(context.Background(), "draft/diff", p, &res)
}

// Read returns the content of the file at path of the draft's merged
// view.
func (c *Client) Read(draft, path string) ([]byte, error) {
	var res readResult
	if err := c.call(context.Background(), "draft/read", readParams{Draft: draft, Path: path}, &res); err != nil {
		return nil, err
	}
	if res.Binary {
		return res.Data, nil
	}
	return []byte(res.Text), nil
}

// Hunks returns the hunks of the draft's changes at paths (none: all),
// file by file.
func (c *Client) Hunks(draft string, paths ...string) ([]FileHunks, error) {
	var res []FileHunks
	return res, c.call(context.Background(), "draft/hunks", pathsParams{Draft: draft, Paths: paths}, &res)
}

// BeginStep begins a step of the draft's timeline by a, labelled label;
// run, when not nil, is the command the caller starts, whose changes
// through the daemon's mounts are by it until the step ends. end ends
// the step and returns its checkpoint (nil when the step changed
// nothing).
func (c *Client) BeginStep(draft string, a overlay.Author, label string, run []string) (end func() (*overlay.Checkpoint, error), err error) {
	p := stepParams{Draft: draft, Author: a, Label: label, Run: run}
	var res stepResult
	if err := c.call(context.Background(), "draft/beginStep", p, &res); err != nil {
		return nil, err
	}
	return func() (*overlay.Checkpoint, error) {
		var cp *overlay.Checkpoint
		return cp, c.call(context.Background(), "draft/endStep", endStepParams{Step: res.Step}, &cp)
	}, nil
}

// Timeline returns the draft's checkpoints, newest first.
func (c *Client) Timeline(draft string) ([]overlay.Checkpoint, error) {
	var res []overlay.Checkpoint
	return res, c.call(context.Background(), "draft/timeline", draftParams{Draft: draft}, &res)
}

// Rewind puts the draft back as right after the checkpoint id.
func (c *Client) Rewind(draft string, id uint64) (*overlay.Checkpoint, error) {
	var res overlay.Checkpoint
	return &res, c.call(context.Background(), "draft/rewind", rewindParams{Draft: draft, Checkpoint: id}, &res)
}

// DiffRange compares checkpoint from (0: what is below the draft) with
// checkpoint to, at paths (none: everywhere).
func (c *Client) DiffRange(draft string, from, to uint64, paths ...string) ([]overlay.FileDiff, error) {
	p := rangeParams{Draft: draft, From: from, To: to, Paths: paths}
	var res []overlay.FileDiff
	return res, c.call(context.Background(), "draft/diffRange", p, &res)
}

// CommitOptions choose what Commit applies and how.
type CommitOptions struct {
	Paths []string // none (and no Hunks): every change
	// Hunks are hunk IDs (from Hunks or Diff) to commit, instead of
	// Paths.
	Hunks  []string
	Force  bool
	DryRun bool
	// SkipIgnored leaves out what git ignores (and .git directories).
	SkipIgnored bool
	// AllowSetid and AllowOwner commit set-id/sticky bits and owners
	// other than the disk's (see overlay.CommitOptions).
	AllowSetid bool
	AllowOwner bool
}

// Commit applies the draft. progress, when set, is called as the daemon
// reports progress. When the commit is refused for conflicts, the
// report comes back with the error (wrapping overlay.ErrConflict).
func (c *Client) Commit(draft string, o CommitOptions, progress func(done, total int)) (*overlay.CommitResult, error) {
	p := commitParams{Draft: draft, Paths: o.Paths, Hunks: o.Hunks, Force: o.Force, DryRun: o.DryRun,
		SkipIgnored: o.SkipIgnored, AllowSetid: o.AllowSetid, AllowOwner: o.AllowOwner}
	if progress != nil {
		p.Progress = true
		c.mu.Lock()
		c.progress = progress
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			c.progress = nil
			c.mu.Unlock()
		}()
	}
	var res overlay.CommitResult
	err := c.call(context.Background(), "draft/commit", p, &res)
	var e *Error
	if errors.As(err, &e) && e.Data.Result != nil {
		if json.Unmarshal(e.Data.Result, &res) == nil {
			return &res, err
		}
	}
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// DiscardOptions choose what Discard drops: one of Paths, Hunks (hunk
// IDs) or All.
type DiscardOptions struct {
	Paths []string
	Hunks []string
	All   bool
}

// Discard drops draft changes and returns the paths dropped.
func (c *Client) Discard(draft string, o DiscardOptions) ([]string, error) {
	p := discardParams{Draft: draft, Paths: o.Paths, Hunks: o.Hunks, All: o.All}
	var res pathsResult
	err := c.call(context.Background(), "draft/discard", p, &res)
	return res.Paths, err
}

// Undo reverts the draft's last commit.
func (c *Client) Undo(draft string) (*overlay.UndoResult, error) {
	var res overlay.UndoResult
	if err := c.call(context.Background(), "draft/undo", sourceParams{Draft: draft}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// GC drops what the draft's state no longer needs, or with dryRun says
// what it holds and what would go.
func (c *Client) GC(draft string, dryRun bool) (*overlay.GCResult, error) {
	var res overlay.GCResult
	if err := c.call(context.Background(), "draft/gc", gcParams{Draft: draft, DryRun: dryRun}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Log returns the draft's history.
func (c *Client) Log(draft string) ([]overlay.LogEntry, error) {
	var res []overlay.LogEntry
	return res, c.call(context.Background(), "draft/log", draftParams{Draft: draft}, &res)
}

// Drafts lists the workspace's drafts (draft/list).
func (c *Client) Drafts() ([]DraftInfo, error) {
	var res []DraftInfo
	return res, c.call(context.Background(), "draft/list", struct{}{}, &res)
}

// Mount has the daemon mount the draft's merged view if it is not, and
// returns where it is.
func (c *Client) Mount(draft string) (string, error) {
	var res mountResult
	err := c.call(context.Background(), "draft/mount", draftParams{Draft: draft}, &res)
	return res.Mount, err
}

// OpenBuffer opens or replaces the buffer of path with text at version.
func (c *Client) OpenBuffer(path string, version int64, text string) error {
	return c.call(context.Background(), "buffer/didOpen", didOpenParams{Path: path, Version: version, Text: text}, nil)
}

// ChangeBuffer applies edits in order to the open buffer of path, making
// it version; false: the version was stale. length, when not negative,
// is the byte length of the result, so drift shows as a CodeResync
// error. Ranges count in the encoding Initialize negotiated.
func (c *Client) ChangeBuffer(path string, version int64, edits []buffers.Edit, length int64) (bool, error) {
	p := didChangeParams{Path: path, Version: version, Changes: make([]textChange, len(edits))}
	for i, e := range edits {
		r := wireRange(e.Range)
		p.Changes[i] = textChange{Range: &r, Text: e.Text}
	}
	if length >= 0 {
		p.Length = &length
	}
	var res didChangeResult
	err := c.call(context.Background(), "buffer/didChange", p, &res)
	return res.Applied, err
}

// SaveBuffer marks a buffer saved.
func (c *Client) SaveBuffer(path string) error {
	return c.call(context.Background(), "buffer/didSave", bufferParams{Path: path}, nil)
}

// CloseBuffer closes a buffer.
func (c *Client) CloseBuffer(path string) error {
	return c.call(context.Background(), "buffer/didClose", bufferParams{Path: path}, nil)
}

// Buffers lists the open buffers.
func (c *Client) Buffers() ([]buffers.Info, error) {
	var res []buffers.Info
	return res, c.call(context.Background(), "buffer/list", nil, &res)
}
