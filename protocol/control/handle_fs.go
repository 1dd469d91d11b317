package control

import (
	"context"
	"io/fs"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/agent"
)

// The fs/* methods give front ends in other processes (draftfs acp, mcp)
// the merged view while a daemon owns the workspace: agent.Files over
// the socket, see Files. Paths are keys, as Files.Resolve returns them
// ("" is the root); they are still checked to stay in the workspace.

// local is the merged view a fs/* request works on, and the key of p;
// the connection becomes a user of the draft.
func (cn *conn) local(d *overlay.Draft, src overlay.Source, p string) (*agent.Local, string, error) {
	cn.use(d.Name())
	key, err := cn.s.key(p)
	if err != nil {
		return nil, "", err
	}
	return agent.NewLocal(d, src), key, nil
}

// key checks a key from a client: "" is the root.
func (s *Server) key(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	return s.ws.Rel(p)
}

// onPath makes the handler of an fs/* method on one path (fsParams): op
// gets the view the front end acts in and the path's key.
func onPath(op func(*agent.Local, string) (any, error)) func(*conn, context.Context, *jsonrpc2.Request) (any, error) {
	return onDraft(fsWrites, func(cn *conn, p fsParams, d *overlay.Draft, src overlay.Source) (any, error) {
		l, key, err := cn.local(d, src, p.Path)
		if err != nil {
			return nil, err
		}
		return op(l, key)
	}, "source")
}

func fsStat(l *agent.Local, key string) (any, error)      { return l.Stat(key) }
func fsLstat(l *agent.Local, key string) (any, error)     { return l.Lstat(key) }
func fsReadDir(l *agent.Local, key string) (any, error)   { return l.ReadDir(key) }
func fsMkdirAll(l *agent.Local, key string) (any, error)  { return nil, l.MkdirAll(key) }
func fsRemove(l *agent.Local, key string) (any, error)    { return nil, l.Remove(key) }
func fsRemoveAll(l *agent.Local, key string) (any, error) { return nil, l.RemoveAll(key) }

func (cn *conn) fsResolve(p fsParams, d *overlay.Draft, _ overlay.Source) (any, error) {
	key, err := d.Resolve(p.Path)
	if err != nil {
		return nil, err
	}
	return keyResult{Key: key}, nil
}

func (cn *conn) fsReadFile(p fsReadParams, d *overlay.Draft, src overlay.Source) (any, error) {
	l, key, err := cn.local(d, src, p.Path)
	if err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 || limit > readLimit {
		limit = readLimit
	}
	b, err := l.ReadFile(key, limit)
	if err != nil {
		return nil, err
	}
	return dataResult{Data: b}, nil
}

func (cn *conn) fsWriteFile(p fsWriteParams, d *overlay.Draft, src overlay.Source) (any, error) {
	l, key, err := cn.local(d, src, p.Path)
	if err != nil {
		return nil, err
	}
	mode := fs.FileMode(p.Mode)
	if mode == 0 {
		mode = 0o644
	}
	return nil, l.WriteFile(key, p.Data, mode)
}

func (cn *conn) fsRename(p fsRenameParams, d *overlay.Draft, src overlay.Source) (any, error) {
	from, err := cn.s.key(p.From)
	if err != nil {
		return nil, err
	}
	l, to, err := cn.local(d, src, p.To)
	if err != nil {
		return nil, err
	}
	return nil, l.Rename(from, to)
}

func (cn *conn) fsDiscard(p fsDiscardParams, d *overlay.Draft, src overlay.Source) (any, error) {
	l, _, err := cn.local(d, src, "")
	if err != nil {
		return nil, err
	}
	var keys []string // nil: all
	if !p.All {
		keys = []string{}
		for _, path := range p.Paths {
			k, err := cn.s.key(path)
			if err != nil {
				return nil, err
			}
			keys = append(keys, k)
		}
	}
	return nil, l.Discard(keys)
}
