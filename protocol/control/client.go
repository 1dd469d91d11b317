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

// Call sends a request and decodes its result into result (nil: drop it).
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
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

// callSpliced is Call for params given as the pieces of their JSON,
// written as they are (stream.splice).
func (c *Client) callSpliced(ctx context.Context, method string, pieces [][]byte, result any) error {
	params, drop := c.stream.splice(pieces)
	defer drop()
	return c.Call(ctx, method, params, result)
}

// ErrDisconnected: the connection to the daemon is gone.
var ErrDisconnected = errors.New("connection to the daemon lost")

// Notify sends a notification.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	return c.rpc.Notify(ctx, method, params)
}

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

// Initialize starts a session: the daemon then sends change
// notifications, and buffer ranges count in the negotiated encoding.
func (c *Client) Initialize(p InitializeParams) (*InitializeResult, error) {
	var res InitializeResult
	return &res, c.Call(context.Background(), "initialize", p, &res)
}

// Status lists the draft's changes.
func (c *Client) Status(p PathsParams) ([]overlay.StatusEntry, error) {
	var res []overlay.StatusEntry
	return res, c.Call(context.Background(), "draft/status", p, &res)
}

// Diff returns the draft's changes as unified diffs.
func (c *Client) Diff(p PathsParams) ([]overlay.FileDiff, error) {
	var res []overlay.FileDiff
	return res, c.Call(context.Background(), "draft/diff", p, &res)
}

// Read returns a file of the merged view.
func (c *Client) Read(p ReadParams) (*ReadResult, error) {
	var res ReadResult
	return &res, c.Call(context.Background(), "draft/read", p, &res)
}

// Hunks returns the hunks of the draft's changes, file by file.
func (c *Client) Hunks(p PathsParams) ([]FileHunks, error) {
	var res []FileHunks
	return res, c.Call(context.Background(), "draft/hunks", p, &res)
}

// BeginStep begins a step of the draft's timeline; end ends it and
// returns its checkpoint (nil when the step changed nothing).
func (c *Client) BeginStep(p StepParams) (end func() (*overlay.Checkpoint, error), err error) {
	var res stepResult
	if err := c.Call(context.Background(), "draft/beginStep", p, &res); err != nil {
		return nil, err
	}
	return func() (*overlay.Checkpoint, error) {
		var cp *overlay.Checkpoint
		return cp, c.Call(context.Background(), "draft/endStep", endStepParams{Step: res.Step}, &cp)
	}, nil
}

// Timeline returns the draft's checkpoints, newest first.
func (c *Client) Timeline(p DraftParams) ([]overlay.Checkpoint, error) {
	var res []overlay.Checkpoint
	return res, c.Call(context.Background(), "draft/timeline", p, &res)
}

// Rewind puts the draft back as right after a checkpoint.
func (c *Client) Rewind(p RewindParams) (*overlay.Checkpoint, error) {
	var res overlay.Checkpoint
	return &res, c.Call(context.Background(), "draft/rewind", p, &res)
}

// DiffRange compares two checkpoints.
func (c *Client) DiffRange(p RangeParams) ([]overlay.FileDiff, error) {
	var res []overlay.FileDiff
	return res, c.Call(context.Background(), "draft/diffRange", p, &res)
}

// Commit applies the draft. progress, when set, is called as the daemon
// reports progress. When the commit is refused for conflicts, the
// report comes back with the error (wrapping overlay.ErrConflict).
func (c *Client) Commit(p CommitParams, progress func(done, total int)) (*overlay.CommitResult, error) {
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
	err := c.Call(context.Background(), "draft/commit", p, &res)
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

// Discard drops draft changes and returns the paths dropped.
func (c *Client) Discard(p DiscardParams) ([]string, error) {
	var res pathsResult
	err := c.Call(context.Background(), "draft/discard", p, &res)
	return res.Paths, err
}

// Undo reverts the last commit.
func (c *Client) Undo(p SourceParams) (*overlay.UndoResult, error) {
	var res overlay.UndoResult
	if err := c.Call(context.Background(), "draft/undo", p, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// GC drops what the draft's state no longer needs, or with DryRun says
// what it holds and what would go.
func (c *Client) GC(p GCParams) (*overlay.GCResult, error) {
	var res overlay.GCResult
	if err := c.Call(context.Background(), "draft/gc", p, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Log returns the draft's history.
func (c *Client) Log(p DraftParams) ([]overlay.LogEntry, error) {
	var res []overlay.LogEntry
	return res, c.Call(context.Background(), "draft/log", p, &res)
}

// Drafts lists the workspace's drafts (draft/list).
func (c *Client) Drafts() ([]DraftInfo, error) {
	var res []DraftInfo
	return res, c.Call(context.Background(), "draft/list", struct{}{}, &res)
}

// Mount has the daemon mount the draft's merged view if it is not, and
// returns where it is.
func (c *Client) Mount(p DraftParams) (string, error) {
	var res mountResult
	err := c.Call(context.Background(), "draft/mount", p, &res)
	return res.Mount, err
}

// OpenBuffer opens or replaces a buffer.
func (c *Client) OpenBuffer(p DidOpenParams) error {
	return c.Call(context.Background(), "buffer/didOpen", p, nil)
}

// ChangeBuffer changes an open buffer; false: the version was stale.
func (c *Client) ChangeBuffer(p DidChangeParams) (bool, error) {
	var res didChangeResult
	err := c.Call(context.Background(), "buffer/didChange", p, &res)
	return res.Applied, err
}

// SaveBuffer marks a buffer saved.
func (c *Client) SaveBuffer(path string) error {
	return c.Call(context.Background(), "buffer/didSave", bufferParams{Path: path}, nil)
}

// CloseBuffer closes a buffer.
func (c *Client) CloseBuffer(path string) error {
	return c.Call(context.Background(), "buffer/didClose", bufferParams{Path: path}, nil)
}

// Buffers lists the open buffers.
func (c *Client) Buffers() ([]buffers.Info, error) {
	var res []buffers.Info
	return res, c.Call(context.Background(), "buffer/list", nil, &res)
}
