package control

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/draftfs/draftfs/overlay"
)

// DraftInfo describes one draft of the workspace (draft/list).
type DraftInfo struct {
	Name string `json:"name"`
	// Changes counts what status lists; Ignored how many of them git
	// ignores.
	Changes int `json:"changes"`
	Ignored int `json:"ignored,omitempty"`
	// Mount is where the daemon serves its merged view, if anywhere.
	Mount string `json:"mount,omitempty"`
	// Default: the draft of requests that name none.
	Default bool `json:"default,omitempty"`
	// Users are the processes working in it: the daemon for its default
	// draft, and each client that read or wrote it through fs/*.
	Users []DraftUser `json:"users,omitempty"`
	// Error says why the draft could not be opened (say, another
	// process holds it).
	Error string `json:"error,omitempty"`
}

// DraftUser is a process working in a draft.
type DraftUser struct {
	Pid     int    `json:"pid"`
	Client  string `json:"client,omitempty"`  // its clientInfo name
	Command string `json:"command,omitempty"` // its command line
}

// use records that the connection works in a draft.
func (cn *conn) use(draft string) {
	if draft == "" {
		draft = cn.s.opts.Draft
	}
	cn.usesMu.Lock()
	defer cn.usesMu.Unlock()
	if cn.uses == nil {
		cn.uses = map[string]bool{}
	}
	cn.uses[draft] = true
}

// users maps each draft to the processes using it.
func (s *Server) users() map[string][]DraftUser {
	out := map[string][]DraftUser{}
	if s.opts.Daemon {
		out[s.opts.Draft] = []DraftUser{{Pid: os.Getpid(), Client: "draftfs daemon", Command: commandLine(os.Getpid())}}
	}
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for cn := range s.conns {
		conns = append(conns, cn)
	}
	s.mu.Unlock()
	for _, cn := range conns {
		cn.usesMu.Lock()
		for name := range cn.uses {
			u := DraftUser{Pid: cn.pid, Client: cn.client, Command: commandLine(cn.pid)}
			if !slices.Contains(out[name], u) {
				out[name] = append(out[name], u)
			}
		}
		cn.usesMu.Unlock()
	}
	return out
}

// commandLine is a process's command line, "" when unknown.
func commandLine(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

func (cn *conn) draftList(_ context.Context, req *jsonrpc2.Request) (any, error) {
	names, err := cn.s.ws.Drafts()
	if err != nil {
		return nil, err
	}
	if !slices.Contains(names, cn.s.opts.Draft) {
		names = append(names, cn.s.opts.Draft)
		slices.Sort(names)
	}
	users := cn.s.users()
	out := []DraftInfo{}
	for _, name := range names {
		info := DraftInfo{Name: name, Default: name == cn.s.opts.Draft, Users: users[name]}
		if cn.s.opts.Mountpoint != nil {
			info.Mount = cn.s.opts.Mountpoint(name)
		}
		d, err := cn.s.ws.Draft(name)
		if err == nil {
			var st []overlay.StatusEntry
			if st, err = d.Status(); err == nil {
				info.Changes = len(st)
				for _, e := range st {
					if e.Ignored {
						info.Ignored++
					}
				}
			}
		}
		if err != nil {
			info.Error = err.Error()
		}
		out = append(out, info)
	}
	return out, nil
}

// markOthers sets AlsoIn on status entries that other drafts of the
// workspace change too: committing one draft makes the other's change
// a conflict. Drafts that cannot be opened are skipped.
func (s *Server) markOthers(d *overlay.Draft, st []overlay.StatusEntry) {
	if len(st) == 0 {
		return
	}
	names, _ := s.ws.Drafts()
	for _, name := range names {
		if name == d.Name() {
			continue
		}
		other, err := s.ws.Draft(name)
		if err != nil {
			continue
		}
		changed := other.Changed()
		for i := range st {
			if changed[strings.TrimSuffix(st[i].Path, "/")] {
				st[i].AlsoIn = append(st[i].AlsoIn, name)
			}
		}
	}
}
