package control

import (
	"context"
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/draftfs/draftfs/overlay"
)

// stepParams begin a step of the draft's timeline (draft/beginStep):
// what changes until draft/endStep makes one checkpoint by Author.
type stepParams struct {
	Draft  string         `json:"draft,omitempty"`
	Author overlay.Author `json:"author"`
	Label  string         `json:"label,omitempty"`
	// Run is the command a `draftfs run` (or the agent of `draftfs
	// acp`) started: until the step ends, the processes the client
	// starts, and theirs, make their changes through the daemon's
	// mounts as this command.
	Run []string `json:"run,omitempty"`
}

// stepResult names a step under way.
type stepResult struct {
	Step uint64 `json:"step"`
}

// endStepParams end a step; its checkpoint (null when the step changed
// nothing) is the answer.
type endStepParams struct {
	Step uint64 `json:"step"`
}

// rewindParams name the checkpoint draft/rewind puts the draft back to.
type rewindParams struct {
	Draft      string `json:"draft,omitempty"`
	Checkpoint uint64 `json:"checkpoint"`
	Source     string `json:"source,omitempty"`
}

// rangeParams choose two checkpoints to compare (draft/diffRange; From
// 0: what is below the draft).
type rangeParams struct {
	Draft string   `json:"draft,omitempty"`
	From  uint64   `json:"from"`
	To    uint64   `json:"to"`
	Paths []string `json:"paths,omitempty"`
}

func (p stepParams) ref() (string, string)   { return p.Draft, "" }
func (p rewindParams) ref() (string, string) { return p.Draft, p.Source }
func (p rangeParams) ref() (string, string)  { return p.Draft, "" }

// steps are a connection's steps under way, ended when it ends: a
// `draftfs run` killed must not hold the draft's checkpoints back.
type steps struct {
	mu   sync.Mutex
	next uint64
	end  map[uint64]func() (*overlay.Checkpoint, error)
}

func (s *steps) add(end func() (*overlay.Checkpoint, error)) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.end == nil {
		s.end = map[uint64]func() (*overlay.Checkpoint, error){}
	}
	s.next++
	s.end[s.next] = end
	return s.next
}

func (s *steps) take(id uint64) func() (*overlay.Checkpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	end := s.end[id]
	delete(s.end, id)
	return end
}

// endAll ends every step under way.
func (s *steps) endAll() {
	s.mu.Lock()
	ends := s.end
	s.end = nil
	s.mu.Unlock()
	for _, end := range ends {
		end()
	}
}

func (cn *conn) beginStep(p stepParams, d *overlay.Draft, _ overlay.Source) (any, error) {
	if p.Author.Source == "" {
		p.Author.Source = overlay.SourceCLI
	}
	if p.Author.Source != overlay.SourceMount { // a run's writes come through the mount
		if _, err := sourceOf(string(p.Author.Source), overlay.SourceCLI); err != nil {
			return nil, err
		}
	}
	end := d.BeginStep(p.Author, p.Label)
	if len(p.Run) > 0 && cn.s.opts.Run != nil && cn.pid > 0 {
		endRun, endStep := cn.s.opts.Run(cn.pid, p.Run), end
		end = func() (*overlay.Checkpoint, error) {
			// The step's checkpoint first: the feed may still deliver
			// changes its processes made.
			defer endRun()
			return endStep()
		}
	}
	return stepResult{Step: cn.steps.add(end)}, nil
}

func (cn *conn) endStep(_ context.Context, req *jsonrpc2.Request) (any, error) {
	var p endStepParams
	if err := decode(req, &p, "step"); err != nil {
		return nil, err
	}
	end := cn.steps.take(p.Step)
	if end == nil {
		return nil, invalidParams("draft/endStep: no step %d under way on this connection", p.Step)
	}
	return end()
}

func (cn *conn) timeline(_ draftParams, d *overlay.Draft, _ overlay.Source) (any, error) {
	return d.Timeline()
}

func (cn *conn) rewind(p rewindParams, d *overlay.Draft, src overlay.Source) (any, error) {
	return d.Rewind(p.Checkpoint, overlay.Author{Source: src})
}

func (cn *conn) diffRange(p rangeParams, d *overlay.Draft, _ overlay.Source) (any, error) {
	keys, err := cn.s.names(d, p.Paths)
	if err != nil {
		return nil, err
	}
	return d.DiffCheckpoints(p.From, p.To, keys...)
}
