package control

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/agent"
)

// Files is agent.Files over a daemon's control socket (the fs/* methods),
// for front ends in another process than the daemon owning the
// workspace. Errors unwrap as agent.Local's do: errors.Is(err,
// fs.ErrNotExist), overlay.Errno(err), agent.ErrTooLarge.
type Files struct {
	c      *Client        // read only
	root   string         // read only
	draft  string         // read only
	source overlay.Source // read only
}

var _ agent.Files = (*Files)(nil)

// NewFiles initializes c (so the daemon sends the changes Watch reports)
// and returns the merged view of draft ("": the daemon's), logging
// changes as src.
func NewFiles(c *Client, draft string, src overlay.Source) (*Files, error) {
	res, err := c.Initialize("draftfs "+string(src), "")
	if err != nil {
		return nil, err
	}
	if draft == "" {
		draft = res.Draft
	}
	return &Files{c: c, root: res.Workspace, draft: draft, source: src}, nil
}

func (f *Files) call(method string, params, result any) error {
	return f.c.call(context.Background(), method, params, result)
}

func (f *Files) params(key string) fsParams {
	return fsParams{Draft: f.draft, Source: string(f.source), Path: key}
}

// Root implements agent.Files.
func (f *Files) Root() string { return f.root }

// Resolve implements agent.Files.
func (f *Files) Resolve(path string) (string, error) {
	var res keyResult
	err := f.call("fs/resolve", f.params(path), &res)
	return res.Key, err
}

// Stat implements agent.Files.
func (f *Files) Stat(key string) (agent.Info, error) {
	var res agent.Info
	err := f.call("fs/stat", f.params(key), &res)
	return res, err
}

// Lstat implements agent.Files.
func (f *Files) Lstat(key string) (agent.Info, error) {
	var res agent.Info
	err := f.call("fs/lstat", f.params(key), &res)
	return res, err
}

// ReadDir implements agent.Files.
func (f *Files) ReadDir(key string) ([]agent.Info, error) {
	var res []agent.Info
	err := f.call("fs/readDir", f.params(key), &res)
	return res, err
}

// ReadFile implements agent.Files.
func (f *Files) ReadFile(key string, limit int64) ([]byte, error) {
	var res dataResult
	err := f.call("fs/readFile", fsReadParams{fsParams: f.params(key), Limit: limit}, &res)
	if err != nil {
		return nil, err
	}
	if res.Data == nil {
		res.Data = []byte{}
	}
	return res.Data, nil
}

// WriteLimit implements agent.WriteLimiter: the most data whose base64
// text, with the rest of the request, fits a message (MaxMessage).
func (f *Files) WriteLimit() int64 {
	return int64(base64.StdEncoding.DecodedLen(MaxMessage - 64<<10))
}

// WriteFile implements agent.Files. Files over WriteLimit are refused
// with agent.ErrWriteTooLarge without sending them.
func (f *Files) WriteFile(key string, data []byte, perm fs.FileMode) error {
	if limit := f.WriteLimit(); int64(len(data)) > limit || len(key) > 32<<10 {
		return fmt.Errorf("write %s: %d bytes, over the limit of %d bytes for one write through the daemon's socket (%d MiB messages): %w",
			key, len(data), limit, MaxMessage>>20, agent.ErrWriteTooLarge)
	}
	// The text goes out as base64 in one buffer of its final size, the
	// rest of the params beside it (fsWriteParams on the wire).
	rest, err := json.Marshal(struct {
		fsParams
		Mode uint32 `json:"mode,omitempty"`
	}{f.params(key), uint32(perm.Perm())})
	if err != nil {
		return err
	}
	b64 := make([]byte, base64.StdEncoding.EncodedLen(len(data)))
	base64.StdEncoding.Encode(b64, data)
	return f.c.callSpliced(context.Background(), "fs/writeFile",
		[][]byte{[]byte(`{"data":"`), b64, []byte(`",`), rest[1:]}, nil)
}

// MkdirAll implements agent.Files.
func (f *Files) MkdirAll(key string) error { return f.call("fs/mkdirAll", f.params(key), nil) }

// Remove implements agent.Files.
func (f *Files) Remove(key string) error { return f.call("fs/remove", f.params(key), nil) }

// RemoveAll implements agent.Files.
func (f *Files) RemoveAll(key string) error { return f.call("fs/removeAll", f.params(key), nil) }

// Rename implements agent.Files.
func (f *Files) Rename(from, to string) error {
	return f.call("fs/rename", fsRenameParams{Draft: f.draft, Source: string(f.source), From: from, To: to}, nil)
}

// Discard implements agent.Files.
func (f *Files) Discard(keys []string) error {
	return f.call("fs/discard", fsDiscardParams{Draft: f.draft, Source: string(f.source), Paths: keys, All: keys == nil}, nil)
}

// Status implements agent.Files.
func (f *Files) Status(keys ...string) ([]overlay.StatusEntry, error) {
	return f.c.Status(f.draft, keys...)
}

// Diff implements agent.Files.
func (f *Files) Diff(keys ...string) ([]overlay.FileDiff, error) {
	return f.c.Diff(f.draft, DiffOptions{Paths: keys})
}

// Watch implements agent.Files: changes to this draft's merged view,
// including its buffers and disk; an overflow reports the root ("").
func (f *Files) Watch(fn func(key string)) (stop func()) {
	return f.c.Watch(func(n ChangeNotice) {
		if n.Draft != "" && n.Draft != f.draft {
			return
		}
		if n.Overflow {
			fn("")
			return
		}
		if n.From != "" {
			fn(f.keyOf(n.From))
		}
		fn(f.keyOf(n.Path))
	})
}

// keyOf turns an absolute path from a notification into a key.
func (f *Files) keyOf(p string) string {
	rel, err := filepath.Rel(f.root, p)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return ""
	}
	return filepath.ToSlash(rel)
}
