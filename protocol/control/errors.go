package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/sourcegraph/jsonrpc2"
	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/buffers"
	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/agent"
)

// Error codes beyond JSON-RPC's own (-32700 parse error, -32600 invalid
// request, -32601 method not found, -32602 invalid params, -32603
// internal error). Error.data.kind tells finer cases apart.
const (
	// CodeRefused: the operation was refused and nothing changed: a
	// commit with conflicts (kind "conflict", data.result holds the
	// commit's report), nothing to undo ("nothingToUndo"), disk files
	// changed since the commit being undone ("diskChanged"), a discard of
	// paths without changes ("noChanges"), a peer of another user
	// ("peer").
	CodeRefused = -32001
	// CodeNotFound: no such file ("notFound", with data.errno), or no
	// buffer open at the path ("notOpen"). The code ACP uses.
	CodeNotFound = -32002
	// CodeResync: the buffer's text differs from the client's (the
	// length it sent does not match): send the full text (didOpen or a
	// full-text didChange).
	CodeResync = -32003
	// CodeFileSystem: a file operation failed; data.errno names the
	// errno ("EISDIR", "ENOTEMPTY", ...).
	CodeFileSystem = -32004
	// CodeTooLarge: a file is over the read limit ("tooLarge").
	CodeTooLarge = -32005
)

// Kinds of error, in Error.data.kind.
const (
	kindOutside       = "outside"
	kindConflict      = "conflict"
	kindNothingToUndo = "nothingToUndo"
	kindDiskChanged   = "diskChanged"
	kindNoChanges     = "noChanges"
	kindNoHunk        = "noHunk"
	kindNoCheckpoint  = "noCheckpoint"
	kindPeer          = "peer"
	kindReview        = "review"
	kindNotFound      = "notFound"
	kindNotOpen       = "notOpen"
	kindResync        = "resync"
	kindBadRange      = "badRange"
	kindTooLarge      = "tooLarge"
	kindFileSystem    = "fs"
	kindCorrupt       = "corrupt"
	kindParams        = "params"
)

// ErrorData is the data member of the daemon's errors.
type ErrorData struct {
	Kind  string `json:"kind,omitempty"`
	Errno string `json:"errno,omitempty"` // "ENOENT", ... for file errors
	// Result is the refused operation's report (a commit's conflicts).
	Result json.RawMessage `json:"result,omitempty"`
}

// refusedToAgent is the answer to a user's method (commit, discard,
// undo, buffers, mounts) asked for from inside draftfs run or acp.
func refusedToAgent(method string) *jsonrpc2.Error {
	e := &jsonrpc2.Error{
		Code:    CodeRefused,
		Message: fmt.Sprintf("%s is refused inside draftfs run and draftfs acp: reviewing the draft (commit, discard, undo, editor buffers) belongs to the user, outside; status, diff and log work here", strings.TrimPrefix(method, "draft/")),
	}
	e.SetError(ErrorData{Kind: kindReview})
	return e
}

// errNoChanges: a discard named a path the draft has no changes at.
var errNoChanges = errors.New("no draft changes")

// paramError is a request whose params are wrong; its message says how.
type paramError struct{ msg string }

func (e *paramError) Error() string { return e.msg }

func invalidParams(format string, args ...any) error {
	return &paramError{msg: "invalid params: " + fmt.Sprintf(format, args...)}
}

// refusal carries the report of a refused operation to its error.
type refusal struct {
	err    error
	result any
}

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// toRPC turns an error from a handler into the JSON-RPC error a client
// gets: the one place where engine errors meet wire codes.
func toRPC(err error) *jsonrpc2.Error {
	var re *jsonrpc2.Error
	if errors.As(err, &re) {
		return re
	}
	msg := humanize(err)
	var pe *paramError
	var errno syscall.Errno
	code, data := int64(jsonrpc2.CodeInternalError), ErrorData{}
	switch {
	case errors.As(err, &pe):
		code, data.Kind = jsonrpc2.CodeInvalidParams, kindParams
	case errors.Is(err, overlay.ErrOutside):
		code, data.Kind = jsonrpc2.CodeInvalidParams, kindOutside
	case errors.Is(err, buffers.ErrBadRange):
		code, data.Kind = jsonrpc2.CodeInvalidParams, kindBadRange
	case errors.Is(err, overlay.ErrConflict):
		code, data.Kind = CodeRefused, kindConflict
	case errors.Is(err, overlay.ErrNothingToUndo):
		code, data.Kind = CodeRefused, kindNothingToUndo
	case errors.Is(err, overlay.ErrDiskChanged):
		code, data.Kind = CodeRefused, kindDiskChanged
	case errors.Is(err, errNoChanges):
		code, data.Kind = CodeRefused, kindNoChanges
	case errors.Is(err, overlay.ErrNoHunk):
		code, data.Kind = CodeRefused, kindNoHunk
	case errors.Is(err, overlay.ErrNoCheckpoint):
		code, data.Kind = CodeRefused, kindNoCheckpoint
	case errors.Is(err, buffers.ErrNotOpen):
		code, data.Kind = CodeNotFound, kindNotOpen
		msg += ": send buffer/didOpen first"
	case errors.Is(err, buffers.ErrResync):
		code, data.Kind = CodeResync, kindResync
	case errors.Is(err, agent.ErrTooLarge):
		code, data.Kind = CodeTooLarge, kindTooLarge
	case errors.Is(err, overlay.ErrCorrupt):
		data.Kind = kindCorrupt
	case errors.As(err, &errno), errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrExist),
		errors.Is(err, fs.ErrPermission), errors.Is(err, fs.ErrInvalid), errors.Is(err, fs.ErrClosed):
		errno = overlay.Errno(err)
		code, data.Kind, data.Errno = CodeFileSystem, kindFileSystem, unix.ErrnoName(errno)
		if errno == syscall.ENOENT {
			code, data.Kind = CodeNotFound, kindNotFound
		}
	}
	var rf *refusal
	if errors.As(err, &rf) && rf.result != nil {
		data.Result, _ = json.Marshal(rf.result)
	}
	e := &jsonrpc2.Error{Code: code, Message: msg}
	if data.Kind != "" || data.Result != nil {
		e.SetError(data)
	}
	return e
}

// humanize drops the package prefixes engine errors carry: the message
// is for a person using an editor or the CLI.
func humanize(err error) string {
	msg := err.Error()
	for _, p := range []string{"overlay: ", "buffers: ", "files: "} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	return msg
}

// Error is an error the daemon answered with. It unwraps to the error
// the engine would have returned in-process (overlay.ErrConflict,
// buffers.ErrResync, a syscall.Errno, ...), so callers test it with
// errors.Is and errors.As whether they talk to a daemon or not.
type Error struct {
	Code    int64
	Message string
	Data    ErrorData
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the engine error the code and kind stand for.
func (e *Error) Unwrap() error {
	switch e.Data.Kind {
	case kindOutside:
		return overlay.ErrOutside
	case kindBadRange:
		return buffers.ErrBadRange
	case kindConflict:
		return overlay.ErrConflict
	case kindNothingToUndo:
		return overlay.ErrNothingToUndo
	case kindDiskChanged:
		return overlay.ErrDiskChanged
	case kindNoChanges:
		return errNoChanges
	case kindNoHunk:
		return overlay.ErrNoHunk
	case kindNoCheckpoint:
		return overlay.ErrNoCheckpoint
	case kindNotOpen:
		return buffers.ErrNotOpen
	case kindResync:
		return buffers.ErrResync
	case kindTooLarge:
		return agent.ErrTooLarge
	case kindCorrupt:
		return overlay.ErrCorrupt
	case kindNotFound, kindFileSystem:
		if n, ok := errnoByName[e.Data.Errno]; ok {
			return n
		}
		return syscall.EIO
	}
	return nil
}

// errnoByName maps errno names back to numbers for errors from the wire.
var errnoByName = func() map[string]syscall.Errno {
	m := map[string]syscall.Errno{}
	for n := syscall.Errno(1); n < 256; n++ {
		if name := unix.ErrnoName(n); name != "" {
			if _, dup := m[name]; !dup {
				m[name] = n
			}
		}
	}
	return m
}()

// fromRPC turns an error from jsonrpc2 into an *Error when it is one
// from the daemon.
func fromRPC(err error) error {
	var re *jsonrpc2.Error
	if !errors.As(err, &re) {
		return err
	}
	e := &Error{Code: re.Code, Message: re.Message}
	if re.Data != nil {
		json.Unmarshal(*re.Data, &e.Data)
	}
	return e
}
