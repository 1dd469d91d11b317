package acp

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"slices"
	"sync"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/agent"
	"github.com/draftfs/draftfs/overlay/beneath"
)

// sessionInfo is what the proxy knows of an ACP session.
type sessionInfo struct {
	roots []string // clean, absolute: cwd, then additionalDirectories
}

// sessions maps ACP sessions to their directories and opens the merged
// views that serve them.
//
// Neither lock is held while calling out, except viewsMu across
// Options.Open, so that a view is opened once.
type sessions struct {
	opts *Options // read only

	mu   sync.Mutex // protects the following
	byID map[string]*sessionInfo

	viewsMu sync.Mutex // protects the following
	views   map[viewKey]agent.Files
}

type viewKey struct{ dir, draft string }

func newSessions(opts *Options) *sessions {
	return &sessions{opts: opts, byID: map[string]*sessionInfo{}, views: map[viewKey]agent.Files{}}
}

// sessionRoots returns a session's directories from its request: cwd
// and additionalDirectories that are absolute, cleaned, without repeats.
func sessionRoots(cwd string, more []string) []string {
	var roots []string
	for _, d := range append([]string{cwd}, more...) {
		if !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		if !slices.Contains(roots, d) {
			roots = append(roots, d)
		}
	}
	return roots
}

// bind maps a session to its directories and returns what it replaced.
func (s *sessions) bind(id string, roots []string) *sessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.byID[id]
	s.byID[id] = &sessionInfo{roots: roots}
	return prev
}

// restore undoes a bind whose request failed.
func (s *sessions) restore(id string, prev *sessionInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev == nil {
		delete(s.byID, id)
		return
	}
	s.byID[id] = prev
}

// info returns a session's directories. A session the proxy has not seen
// answered yet takes those of the session requests still pending when
// they all name the same directories: the agent is reading while it sets
// the session up.
func (s *sessions) info(id string, pending func() [][]string) *sessionInfo {
	s.mu.Lock()
	si := s.byID[id]
	s.mu.Unlock()
	if si != nil {
		return si
	}
	cands := pending()
	if len(cands) == 0 {
		return nil
	}
	for _, c := range cands[1:] {
		if !slices.Equal(c, cands[0]) {
			return nil
		}
	}
	return &sessionInfo{roots: cands[0]}
}

// get returns the session with the merged view of each directory; nil
// when the session is unknown.
func (s *sessions) get(id string, pending func() [][]string) (*Session, error) {
	si := s.info(id, pending)
	if si == nil {
		return nil, nil
	}
	draft := s.draftOf(id)
	out := &Session{Roots: make([]Root, 0, len(si.roots))}
	for _, d := range si.roots {
		top := topOf(d, si.roots)
		f, err := s.view(top, draft)
		if err != nil {
			return nil, err
		}
		out.Roots = append(out.Roots, Root{Dir: d, Files: f, Workspace: top})
	}
	return out, nil
}

// workspaceOf returns the directory whose workspace a terminal of the
// session runs in (the session's directory holding cwd, else its cwd's)
// and the draft.
func (s *sessions) workspaceOf(id, cwd string, pending func() [][]string) (dir, draft string, ok bool) {
	si := s.info(id, pending)
	if si == nil || len(si.roots) == 0 {
		return "", "", false
	}
	d := si.roots[0]
	if filepath.IsAbs(cwd) {
		c := filepath.Clean(cwd)
		for _, r := range si.roots {
			if beneath.Within(c, r) {
				d = r
				break
			}
		}
	}
	return topOf(d, si.roots), s.draftOf(id), true
}

// topOf is the outermost of roots holding d: directories nested in
// another of the session's share its workspace, so that one path never
// has two drafts.
func topOf(d string, roots []string) string {
	top := d
	for _, r := range roots {
		if beneath.Within(top, r) && len(r) < len(top) {
			top = r
		}
	}
	return top
}

// view opens (once) the merged view of a draft of the workspace at dir.
func (s *sessions) view(dir, draft string) (agent.Files, error) {
	s.viewsMu.Lock()
	defer s.viewsMu.Unlock()
	k := viewKey{dir, draft}
	if f, ok := s.views[k]; ok {
		return f, nil
	}
	f, err := s.opts.Open(dir, draft)
	if err != nil {
		return nil, err
	}
	s.views[k] = f
	return f, nil
}

// draftOf is the draft a session writes to: Options.Draft, or with
// DraftPerSession the session's id when it makes a valid draft name,
// else "acp-" and a hash of it.
func (s *sessions) draftOf(id string) string {
	if !s.opts.DraftPerSession {
		return s.opts.Draft
	}
	return SessionDraft(id)
}

// SessionDraft is the draft a session writes to with DraftPerSession:
// its id when that is a valid draft name (letters, digits, '.', '_',
// '-', at most 64), else "acp-" and a hash of the id.
func SessionDraft(id string) string {
	if overlay.ValidDraftName(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "acp-" + hex.EncodeToString(sum[:8])
}
