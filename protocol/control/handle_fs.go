package control

import (
	"context"
	"io/fs"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/draftfs/draftfs/overlay/agent"
)

// The fs/* methods give front ends in other processes (draftfs acp, mcp)
// the merged view while a daemon owns the workspace: agent.Files over
// the socket, see Files. Paths are keys, as Files.Resolve returns them
// ("" is the root); they are still checked to stay in the workspace.

// local is the merged view a fs/* request works on, and its key.
func (cn *conn) local(p *FsParams) (*agent.Local, string, error) {
	src, err := sourceOf(p.Source, "")
	if err != nil {
		return nil, "", err
	}
	d, err := cn.s.draft(p.Draft)
	if err != nil {
		return nil, "", err
	}
	cn.use(d.Name())
	key, err := cn.s.key(p.Path)
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

// fsCall decodes FsParams and runs op on the view and key.
func (cn *conn) fsCall(req *jsonrpc2.Request, op func(*agent.Local, string) (any, error)) (any, error) {
	var p FsParams
	if err := decode(req, &p, "source"); err != nil {
		return nil, err
	}
	l, key, err := cn.local(&p)
	if err != nil {
		return nil, err
	}
	return op(l, key)
}

func (cn *conn) fsResolve(_ context.Context, req *jsonrpc2.Request) (any, error) {
	var p FsParams
	if err := decode(req, &p, "source", "path"); err != nil {
		return nil, err
	}
	d, err := cn.s.draft(p.Draft)
	if err != nil {
		return nil, err
	}
	key, err := d.Resolve(p.Path)
	if err != nil {
		return nil, err
	}
	return KeyResult{Key: key}, nil
}

func (cn *conn) fsStat(_ context.Context, req *jsonrpc2.Request) (any, error) {
	return cn.fsCall(req, func(l *agent.Local, key string) (any, error) { return l.Stat(key) })
}

func (cn *conn) fsLstat(_ context.Context, req *jsonrpc2.Request) (any, error) {
	return cn.fsCall(req, func(l *agent.Local, key string) (any, error) { return l.Lstat(key) })
}

func (cn *conn) fsReadDir(_ context.Context, req *jsonrpc2.Request) (any, error) {
	return cn.fsCall(req, func(l *agent.Local, key string) (any, error) { return l.ReadDir(key) })
}

func (cn *conn) fsMkdirAll(_ context.Context, req *jsonrpc2.Request) (any, error) {
	return cn.fsCall(req, func(l *agent.Local, key string) (any, error) { return nil, l.MkdirAll(key) })
}

func (cn *conn) fsRemove(_ context.Context, req *jsonrpc2.Request) (any, error) {
	return cn.fsCall(req, func(l *agent.Local, key string) (any, error) { return nil, l.Remove(key) })
}

func (cn *conn) fsRemoveAll(_ context.Context, req *jsonrpc2.Request) (any, error) {
	return cn.fsCall(req, func(l *agent.Local, key string) (any, error) { return nil, l.RemoveAll(key) })
}

func (cn *conn) fsReadFile(_ context.Context, req *jsonrpc2.Request) (any, error) {
	var p FsReadParams
	if err := decode(req, &p, "source"); err != nil {
		return nil, err
	}
	l, key, err := cn.local(&p.FsParams)
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
	return DataResult{Data: b}, nil
}

func (cn *conn) fsWriteFile(_ context.Context, req *jsonrpc2.Request) (any, error) {
	var p FsWriteParams
	if err := decode(req, &p, "source", "path", "data"); err != nil {
		return nil, err
	}
	if p.Mode&^0o7777 != 0 {
		return nil, invalidParams(`fs/writeFile: "mode" takes permission bits only (at most 0o7777), not %#o`, p.Mode)
	}
	l, key, err := cn.local(&p.FsParams)
	if err != nil {
		return nil, err
	}
	mode := fs.FileMode(p.Mode)
	if mode == 0 {
		mode = 0o644
	}
	return nil, l.WriteFile(key, p.Data, mode)
}

func (cn *conn) fsRename(_ context.Context, req *jsonrpc2.Request) (any, error) {
	var p FsRenameParams
	if err := decode(req, &p, "source", "from", "to"); err != nil {
		return nil, err
	}
	from, err := cn.s.key(p.From)
	if err != nil {
		return nil, err
	}
	to, err := cn.s.key(p.To)
	if err != nil {
		return nil, err
	}
	l, _, err := cn.local(&FsParams{Draft: p.Draft, Source: p.Source})
	if err != nil {
		return nil, err
	}
	return nil, l.Rename(from, to)
}

func (cn *conn) fsDiscard(_ context.Context, req *jsonrpc2.Request) (any, error) {
	var p FsDiscardParams
	if err := decode(req, &p, "source"); err != nil {
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
	l, _, err := cn.local(&FsParams{Draft: p.Draft, Source: p.Source})
	if err != nil {
		return nil, err
	}
	return nil, l.Discard(keys)
}
