package control

import (
	"context"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/draftfs/draftfs/buffers"
)

// method is one method of the protocol.
type method struct {
	fn func(cn *conn, ctx context.Context, req *jsonrpc2.Request) (any, error)
	// ordered methods run one at a time in arrival order.
	ordered bool
	// buffer methods change a buffer: when one sent as a notification
	// fails, the client is asked for the full text (buffer/resync).
	buffer bool
	// user methods belong to the user's review (commit, discard, undo,
	// editor buffers, mounts): they are refused on the agent socket.
	user bool
	// heavy methods work in proportion to the draft (see
	// ServerOptions.Heavy).
	heavy bool
}

// methods is the protocol; set in init, as handlers refer to it.
var methods map[string]method

func init() {
	methods = map[string]method{
		"initialize":       {fn: (*conn).initialize, ordered: true},
		"buffer/didOpen":   {fn: onBuffer((*conn).didOpen, "path", "version", "text"), ordered: true, buffer: true, user: true},
		"buffer/didChange": {fn: onBuffer((*conn).didChange, "path", "version"), ordered: true, buffer: true, user: true},
		"buffer/didSave":   {fn: onBuffer((*conn).didSave, "path"), ordered: true, buffer: true, user: true},
		"buffer/didClose":  {fn: onBuffer((*conn).didClose, "path"), ordered: true, buffer: true, user: true},
		"buffer/list":      {fn: (*conn).bufferList},
		"draft/status":     {fn: onDraft(reads, (*conn).status)},
		"draft/diff":       {fn: onDraft(reads, (*conn).diff)},
		"draft/hunks":      {fn: onDraft(reads, (*conn).hunks)},
		"draft/read":       {fn: onDraft(reads, (*conn).read, "path")},
		"draft/commit":     {fn: onDraft(writes, (*conn).commit), user: true, heavy: true},
		"draft/discard":    {fn: onDraft(writes, (*conn).discard), user: true, heavy: true},
		"draft/undo":       {fn: onDraft(writes, (*conn).undo), user: true, heavy: true},
		"draft/log":        {fn: onDraft(reads, (*conn).log)},
		"draft/timeline":   {fn: onDraft(reads, (*conn).timeline)},
		"draft/diffRange":  {fn: onDraft(reads, (*conn).diffRange, "to")},
		"draft/rewind":     {fn: onDraft(writes, (*conn).rewind, "checkpoint"), user: true, heavy: true},
		"draft/beginStep":  {fn: onDraft(writes, (*conn).beginStep)},
		"draft/endStep":    {fn: (*conn).endStep},
		"draft/gc":         {fn: onDraft(writes, (*conn).gc), user: true},
		"draft/mount":      {fn: (*conn).mount, user: true},
		"draft/list":       {fn: (*conn).draftList},
		"fs/resolve":       {fn: onDraft(fsWrites, (*conn).fsResolve, "source", "path")},
		"fs/stat":          {fn: onPath(fsStat)},
		"fs/lstat":         {fn: onPath(fsLstat)},
		"fs/readDir":       {fn: onPath(fsReadDir)},
		"fs/readFile":      {fn: onDraft(fsWrites, (*conn).fsReadFile, "source")},
		"fs/writeFile":     {fn: onDraft(fsWrites, (*conn).fsWriteFile, "source", "path", "data")},
		"fs/mkdirAll":      {fn: onPath(fsMkdirAll)},
		"fs/remove":        {fn: onPath(fsRemove)},
		"fs/removeAll":     {fn: onPath(fsRemoveAll)},
		"fs/rename":        {fn: onDraft(fsWrites, (*conn).fsRename, "source", "from", "to")},
		"fs/discard":       {fn: onDraft(fsWrites, (*conn).fsDiscard, "source")},
	}
}

func (cn *conn) initialize(_ context.Context, req *jsonrpc2.Request) (any, error) {
	var p initializeParams
	if err := decode(req, &p); err != nil {
		return nil, err
	}
	name := "utf-16"
	if len(p.PositionEncodings) > 0 {
		name = ""
		for _, e := range p.PositionEncodings {
			if _, ok := positionEncoding(e); ok {
				name = e
				break
			}
		}
		if name == "" {
			return nil, invalidParams(`initialize: none of the position encodings %q is supported: offer "utf-8" or "utf-16"`, p.PositionEncodings)
		}
	}
	cn.enc, _ = positionEncoding(name)
	cn.usesMu.Lock()
	cn.client = p.ClientInfo.Name
	cn.usesMu.Unlock()
	cn.subscribed.Store(true)
	cn.editor.Store(true)
	res := InitializeResult{
		ServerInfo:       Implementation{Name: "draftfs", Version: cn.s.opts.Version},
		PositionEncoding: name,
		Workspace:        cn.s.ws.Root(),
		Draft:            cn.s.opts.Draft,
	}
	if cn.s.opts.Mountpoint != nil {
		res.Mount = cn.s.opts.Mountpoint(cn.s.opts.Draft)
	}
	return res, nil
}

// bufferKey maps an editor's path to the buffer's key: symlinks are
// followed, as the buffer holds the text of the file the path names.
func (s *Server) bufferKey(p string) (string, error) {
	d, err := s.ws.Draft(s.opts.Draft)
	if err != nil {
		return "", err
	}
	key, err := d.Resolve(p)
	if err != nil {
		return "", err
	}
	if key == "" {
		return "", invalidParams("%q is the workspace itself, not a file", p)
	}
	return key, nil
}

// bufferRequest is the params of a method on one editor buffer: the
// path the editor knows it by.
type bufferRequest interface {
	bufferPath() string
}

// onBuffer makes the handler of a buffer method: it decodes the params
// (with the required members), checks them, maps the path to the
// buffer's key, then runs op.
func onBuffer[P bufferRequest](op func(*conn, P, string) (any, error), required ...string) func(*conn, context.Context, *jsonrpc2.Request) (any, error) {
	return func(cn *conn, _ context.Context, req *jsonrpc2.Request) (any, error) {
		p, err := decodeChecked[P](req, required)
		if err != nil {
			return nil, err
		}
		key, err := cn.s.bufferKey(p.bufferPath())
		if err != nil {
			return nil, err
		}
		return op(cn, p, key)
	}
}

func (cn *conn) didOpen(p didOpenParams, key string) (any, error) {
	if err := cn.s.ws.Buffers().Open(key, p.Version, []byte(p.Text)); err != nil {
		return nil, err
	}
	cn.own(key, true)
	return nil, nil
}

func (cn *conn) didChange(p didChangeParams, key string) (any, error) {
	bufs := cn.s.ws.Buffers()
	if p.Text == nil && len(p.Changes) == 1 && p.Changes[0].Range == nil {
		p.Text = &p.Changes[0].Text
	}
	var applied bool
	var err error
	if p.Text != nil {
		if p.Length != nil && int64(len(*p.Text)) != *p.Length {
			return nil, invalidParams(`buffer/didChange: "length" is %d but the text has %d bytes`, *p.Length, len(*p.Text))
		}
		applied, err = bufs.Replace(key, p.Version, []byte(*p.Text))
		if applied {
			cn.own(key, true)
		}
		return didChangeResult{Applied: applied}, err
	}
	edits := make([]buffers.Edit, len(p.Changes))
	for i, c := range p.Changes {
		if c.Range == nil {
			return nil, invalidParams(`buffer/didChange: change %d has no "range": a full-text change must be the only one`, i)
		}
		edits[i] = buffers.Edit{Range: c.Range.buffers(), Text: c.Text}
	}
	length := int64(-1)
	if p.Length != nil {
		length = *p.Length
	}
	applied, err = bufs.Edit(key, p.Version, cn.enc, edits, length)
	if applied {
		cn.own(key, true)
	}
	return didChangeResult{Applied: applied}, err
}

func (cn *conn) didSave(_ bufferParams, key string) (any, error) {
	return nil, cn.s.ws.Buffers().Save(key)
}

func (cn *conn) didClose(_ bufferParams, key string) (any, error) {
	cn.own(key, false)
	return nil, cn.s.ws.Buffers().Close(key)
}

func (cn *conn) bufferList(_ context.Context, req *jsonrpc2.Request) (any, error) {
	if err := decode(req, &struct{}{}); err != nil {
		return nil, err
	}
	return cn.s.ws.Buffers().List(), nil
}
