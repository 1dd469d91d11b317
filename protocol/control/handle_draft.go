package control

import (
	"context"
	"errors"
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

func (cn *conn) status(p pathsParams, d *overlay.Draft, _ overlay.Source) (any, error) {
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

func (cn *conn) diff(p pathsParams, d *overlay.Draft, _ overlay.Source) (any, error) {
	return cn.s.diffs(p, d)
}

// diffs answers draft/diff, and gives draft/hunks what it lists.
func (s *Server) diffs(p pathsParams, d *overlay.Draft) ([]overlay.FileDiff, error) {
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

func (cn *conn) hunks(p pathsParams, d *overlay.Draft, _ overlay.Source) (any, error) {
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

func (cn *conn) read(p readParams, d *overlay.Draft, _ overlay.Source) (any, error) {
	key, err := d.Resolve(p.Path)
	if err != nil {
		return nil, err
	}
	b, err := agent.NewLocal(d, overlay.SourceCLI).ReadFile(key, readLimit)
	if err != nil {
		return nil, err
	}
	if utf8.Valid(b) {
		return readResult{Path: key, Text: string(b)}, nil
	}
	return readResult{Path: key, Data: b, Binary: true}, nil
}

func (cn *conn) commit(p commitParams, d *overlay.Draft, src overlay.Source) (any, error) {
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

func (cn *conn) discard(p discardParams, d *overlay.Draft, src overlay.Source) (any, error) {
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

func (cn *conn) undo(_ sourceParams, d *overlay.Draft, src overlay.Source) (any, error) {
	return d.Undo(src)
}

func (cn *conn) gc(p gcParams, d *overlay.Draft, _ overlay.Source) (any, error) {
	return d.GC(p.DryRun)
}

func (cn *conn) log(_ draftParams, d *overlay.Draft, _ overlay.Source) (any, error) {
	entries, err := d.Log()
	if entries == nil && err == nil {
		entries = []overlay.LogEntry{}
	}
	return entries, err
}

func (cn *conn) mount(_ context.Context, req *jsonrpc2.Request) (any, error) {
	var p draftParams
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
