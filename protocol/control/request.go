package control

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/draftfs/draftfs/overlay"
)

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
