package control

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/agent"
)

// readLimit bounds draft/read: the answer must fit what a client reads.
const readLimit = maxClientMessage / 2

// progressEvery is how often a running commit reports progress.
const progressEvery = 100 * time.Millisecond

func (s *Server) draft(name string) (*overlay.Draft, error) {
	if name == "" {
		name = s.opts.Draft
	}
	return s.ws.Draft(name)
}

// existingDraft is draft for requests that only read: they never create
// a draft, and one that does not exist is an error naming those that do.
func (s *Server) existingDraft(name string) (*overlay.Draft, error) {
	if name == "" {
		name = s.opts.Draft
	}
	if name != s.opts.Draft {
		if err := CheckDraftExists(s.ws, name); err != nil {
			return nil, err
		}
	}
	return s.ws.Draft(name)
}

// draftRequest is the params of a method on one draft: the draft they
// name ("": the daemon's) and who acts, for the log ("": the default).
type draftRequest interface {
	ref() (draft, source string)
}

// checkedRequest is a draftRequest whose members must agree with each
// other: check says how they do not, before any draft is opened.
type checkedRequest interface {
	check() error
}

// access is how a method opens the draft its request names.
type access int

const (
	// reads: the draft must exist (reading never creates one).
	reads access = iota
	// writes: the draft is made if need be; the source defaults to the CLI.
	writes
	// fsWrites: as writes, for a front end's fs/* request, which must
	// name its source.
	fsWrites
)

// decodeChecked decodes a request's params into P, with the required
// members, and checks them if P is a checkedRequest.
func decodeChecked[P any](req *jsonrpc2.Request, required []string) (P, error) {
	var p P
	if err := decode(req, &p, required...); err != nil {
		return p, err
	}
	if c, ok := any(p).(checkedRequest); ok {
		return p, c.check()
	}
	return p, nil
}

// onDraft makes the handler of a method on one draft: it decodes the
// params (with the required members), checks them and the source, opens
// the draft as how says, then runs op.
func onDraft[P draftRequest](how access, op func(*conn, P, *overlay.Draft, overlay.Source) (any, error), required ...string) func(*conn, context.Context, *jsonrpc2.Request) (any, error) {
	return func(cn *conn, _ context.Context, req *jsonrpc2.Request) (any, error) {
		p, err := decodeChecked[P](req, required)
		if err != nil {
			return nil, err
		}
		name, source := p.ref()
		dflt := overlay.SourceCLI
		if how == fsWrites {
			dflt = ""
		}
		src, err := sourceOf(source, dflt)
		if err != nil {
			return nil, err
		}
		if how != fsWrites {
			// Review methods: by the editor or the command. An agent's
			// fs/* writes are by the agent its steps name.
			src = cn.author(src, source == "")
		}
		open := cn.s.draft
		if how == reads {
			open = cn.s.existingDraft
		}
		d, err := open(name)
		if err != nil {
			return nil, err
		}
		return op(cn, p, d, src)
	}
}

// CheckDraftExists fails, naming the drafts there are, when ws has no
// draft called name (the default one always exists).
func CheckDraftExists(ws *overlay.Workspace, name string) error {
	if name == overlay.DefaultDraft {
		return nil
	}
	names, err := ws.Drafts()
	if err != nil || slices.Contains(names, name) {
		return err
	}
	if err := overlay.CheckDraftName(name); err != nil {
		return err
	}
	have := "it has none yet"
	if len(names) > 0 {
		have = "its drafts: " + strings.Join(names, ", ")
	}
	return noDraftError(fmt.Sprintf("the workspace has no draft %q (%s)", name, have))
}

// noDraftError: a request named a draft that does not exist.
type noDraftError string

func (e noDraftError) Error() string { return string(e) }
func (e noDraftError) Unwrap() error { return fs.ErrNotExist }

// name maps a path that names a draft entry to its key: symlinks in its
// directories are followed, the last element is not, so a symlink the
// agent made can itself be reviewed and discarded.
func (s *Server) name(d *overlay.Draft, p string) (string, error) {
	key, err := s.key(p)
	if err != nil {
		return "", err
	}
	dir, base := path.Split(key)
	if dir == "" {
		return key, nil
	}
	rdir, err := d.Resolve(dir)
	if err != nil {
		return "", err
	}
	return path.Join(rdir, base), nil
}

func (s *Server) names(d *overlay.Draft, paths []string) ([]string, error) {
	keys := make([]string, 0, len(paths))
	for _, p := range paths {
		k, err := s.name(d, p)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// withChanges refuses keys at which the draft has no changes: a
// mistyped path must not pass for a commit or discard of nothing.
func withChanges(d *overlay.Draft, keys []string) error {
	for _, k := range keys {
		st, err := d.Status(k)
		if err != nil {
			return err
		}
		if len(st) == 0 {
			// The sentinel starts the message, so it reads once.
			if k == "" {
				return fmt.Errorf("%w: the draft is empty", errNoChanges)
			}
			return fmt.Errorf("%w at %q (draftfs status lists them)", errNoChanges, k)
		}
	}
	return nil
}

func (cn *conn) status(p PathsParams, d *overlay.Draft, _ overlay.Source) (any, error) {
	keys, err := cn.s.names(d, p.Paths)
	if err != nil {
		return nil, err
	}
	st, err := d.Status(keys...)
	if err == nil {
		cn.s.markOthers(d, st)
	}
	return st, err
}

func (cn *conn) diff(p PathsParams, d *overlay.Draft, _ overlay.Source) (any, error) {
	return cn.s.diffs(p, d)
}

// diffs answers draft/diff, and gives draft/hunks what it lists.
func (s *Server) diffs(p PathsParams, d *overlay.Draft) ([]overlay.FileDiff, error) {
	keys, err := s.names(d, p.Paths)
	if err != nil {
		return nil, err
	}
	diffs, err := d.DiffWith(overlay.DiffOptions{Keys: keys, Ignored: p.Ignored, Annotate: p.Annotate})
	if diffs == nil && err == nil {
		diffs = []overlay.FileDiff{}
	}
	return diffs, err
}

func (cn *conn) hunks(p PathsParams, d *overlay.Draft, _ overlay.Source) (any, error) {
	diffs, err := cn.s.diffs(p, d)
	if err != nil {
		return nil, err
	}
	out := make([]FileHunks, 0, len(diffs))
	for _, fd := range diffs {
		if fd.Ignored && !p.Ignored {
			continue
		}
		out = append(out, FileHunks{Path: fd.Path, From: fd.From, Change: fd.Change, Merged: fd.Merged, Hunks: fd.Hunks})
	}
	return out, nil
}

func (cn *conn) read(p ReadParams, d *overlay.Draft, _ overlay.Source) (any, error) {
	key, err := d.Resolve(p.Path)
	if err != nil {
		return nil, err
	}
	b, err := agent.NewLocal(d, overlay.SourceCLI).ReadFile(key, readLimit)
	if err != nil {
		return nil, err
	}
	if utf8.Valid(b) {
		return ReadResult{Path: key, Text: string(b)}, nil
	}
	return ReadResult{Path: key, Data: b, Binary: true}, nil
}

func (cn *conn) commit(p CommitParams, d *overlay.Draft, src overlay.Source) (any, error) {
	keys, err := cn.s.names(d, p.Paths)
	if err != nil {
		return nil, err
	}
	if err := withChanges(d, keys); err != nil {
		return nil, err
	}
	if p.SkipIgnored && len(p.Hunks) == 0 {
		if keys, err = notIgnored(d, keys); err != nil {
			return nil, err
		}
		if len(keys) == 0 {
			return &overlay.CommitResult{DryRun: p.DryRun, Applied: []overlay.StatusEntry{}}, nil
		}
	}
	opts := overlay.CommitOptions{Keys: keys, Hunks: p.Hunks, Force: p.Force, DryRun: p.DryRun, AllowSetid: p.AllowSetid, AllowOwner: p.AllowOwner, Source: src}
	if len(keys) == 0 {
		opts.Keys = nil
	}
	if p.Progress && !p.DryRun {
		stop := cn.reportProgress(&opts)
		defer stop()
	}
	res, err := d.Commit(opts)
	if err != nil {
		if errors.Is(err, overlay.ErrConflict) && res != nil {
			return nil, &refusal{err: err, result: res}
		}
		return nil, err
	}
	return res, nil
}

// notIgnored narrows keys (none: the whole draft) to the changes below
// them that git does not ignore.
func notIgnored(d *overlay.Draft, keys []string) ([]string, error) {
	st, err := d.Status(keys...)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, s := range st {
		if !s.Ignored {
			out = append(out, strings.TrimSuffix(s.Path, "/"))
		}
	}
	return out, nil
}

// reportProgress makes a commit send draft/commitProgress to this
// client: every progressEvery while it runs and once at the end, before
// the answer. The engine's callback runs with the draft locked, so it
// only records; a goroutine sends.
func (cn *conn) reportProgress(opts *overlay.CommitOptions) (stop func()) {
	var done, total atomic.Int64
	opts.Progress = func(d, t int) {
		done.Store(int64(d))
		total.Store(int64(t))
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		var sent int64 = -1
		send := func() {
			if d := done.Load(); d != sent && total.Load() > 0 {
				sent = d
				cn.rpc.Notify(cn.s.ctx, "draft/commitProgress", progressParams{Done: int(d), Total: int(total.Load())})
			}
		}
		for {
			select {
			case <-t.C:
				send()
			case <-quit:
				send()
				return
			}
		}
	}()
	return func() {
		close(quit)
		wg.Wait()
	}
}

func (cn *conn) discard(p DiscardParams, d *overlay.Draft, src overlay.Source) (any, error) {
	if len(p.Hunks) > 0 {
		taken, err := d.DiscardHunks(p.Hunks, src)
		if err != nil {
			return nil, err
		}
		return pathsResult{Paths: taken}, nil
	}
	var keys []string
	if !p.All {
		var err error
		if keys, err = cn.s.names(d, p.Paths); err != nil {
			return nil, err
		}
		if err := withChanges(d, keys); err != nil {
			return nil, err
		}
	}
	dropped, err := d.Discard(keys, src)
	if err != nil {
		return nil, err
	}
	if dropped == nil {
		dropped = []string{}
	}
	return pathsResult{Paths: dropped}, nil
}

func (cn *conn) undo(_ SourceParams, d *overlay.Draft, src overlay.Source) (any, error) {
	return d.Undo(src)
}

func (cn *conn) gc(p GCParams, d *overlay.Draft, _ overlay.Source) (any, error) {
	return d.GC(p.DryRun)
}

func (cn *conn) log(_ DraftParams, d *overlay.Draft, _ overlay.Source) (any, error) {
	entries, err := d.Log()
	if entries == nil && err == nil {
		entries = []overlay.LogEntry{}
	}
	return entries, err
}

func (cn *conn) mount(_ context.Context, req *jsonrpc2.Request) (any, error) {
	var p DraftParams
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	if cn.s.opts.Mount == nil {
		return nil, errors.New("this draftfs process cannot mount: start one with `draftfs serve`")
	}
	d, err := cn.s.draft(p.Draft)
	if err != nil {
		return nil, err
	}
	dir, err := cn.s.opts.Mount(d.Name())
	if err != nil {
		return nil, err
	}
	return mountResult{Mount: dir}, nil
}
