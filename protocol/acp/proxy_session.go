package acp

import (
	"bytes"
	"encoding/json"

	"github.com/sourcegraph/jsonrpc2"
)

// Sessions: the editor's session requests tracked until the agent
// answers, and what is left when a side goes.

// track remembers an editor request until the agent answers it, and
// what a session request tells about the session's directories. It runs
// before the request is forwarded, so the answer always finds it.
func (p *proxy) track(m *message) {
	r := &pendingRequest{id: bytes.Clone(m.id), method: m.method}
	switch m.method {
	case MethodSessionNew, MethodSessionFork, MethodSessionLoad, MethodSessionResume:
		var sp struct {
			SessionID             string   `json:"sessionId"`
			Cwd                   string   `json:"cwd"`
			AdditionalDirectories []string `json:"additionalDirectories"`
		}
		json.Unmarshal(m.params, &sp)
		r.roots = sessionRoots(sp.Cwd, sp.AdditionalDirectories)
		if m.method == MethodSessionLoad || m.method == MethodSessionResume {
			// The agent may read files while loading, before it answers.
			r.sessionID = sp.SessionID
			r.prev = p.sessions.bind(sp.SessionID, r.roots)
		}
	case MethodSessionPrompt:
		if p.opts.Step != nil {
			var sp struct {
				SessionID string `json:"sessionId"`
			}
			json.Unmarshal(m.params, &sp)
			p.mu.Lock()
			name := p.agentName
			p.mu.Unlock()
			r.endStep = p.opts.Step(name, sp.SessionID)
		}
	}
	p.mu.Lock()
	p.pending[idKey(m.id)] = r
	p.mu.Unlock()
}

// settle handles the agent's answer to an editor request: a new session
// is bound to its directories, a failed load restores what it replaced.
func (p *proxy) settle(m *message) {
	k := idKey(m.id)
	p.mu.Lock()
	r := p.pending[k]
	delete(p.pending, k)
	p.mu.Unlock()
	if r == nil {
		return
	}
	if r.endStep != nil {
		r.endStep()
	}
	switch r.method {
	case MethodInitialize:
		var res struct {
			AgentInfo struct {
				Name string `json:"name"`
			} `json:"agentInfo"`
		}
		json.Unmarshal(m.result, &res)
		p.mu.Lock()
		p.agentName = res.AgentInfo.Name
		p.mu.Unlock()
	case MethodSessionNew, MethodSessionFork:
		if id, ok := member(m.result, "sessionId"); ok {
			if s, ok := jsonString(id); ok {
				p.sessions.bind(s, r.roots)
			}
		}
	case MethodSessionLoad, MethodSessionResume:
		if m.err != nil {
			p.sessions.restore(r.sessionID, r.prev)
		}
	}
}

// pendingCreations returns the directories of the session requests
// (new, fork) the agent has not answered; an agent may read files for
// a session before it has told its id.
func (p *proxy) pendingCreations() [][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out [][]string
	for _, r := range p.pending {
		if r.method == MethodSessionNew || r.method == MethodSessionFork {
			out = append(out, r.roots)
		}
	}
	return out
}

// session implements FS.Session.
func (p *proxy) session(id string) (*Session, error) {
	return p.sessions.get(id, p.pendingCreations)
}

// failPending answers every editor request the agent left unanswered.
func (p *proxy) failPending(why string) {
	p.mu.Lock()
	rs := make([]*pendingRequest, 0, len(p.pending))
	for k, r := range p.pending {
		rs = append(rs, r)
		delete(p.pending, k)
	}
	p.mu.Unlock()
	for _, r := range rs {
		if r.endStep != nil {
			r.endStep()
		}
		p.editor.write(errorLine(r.id, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: "Internal error: " + why}))
	}
}
