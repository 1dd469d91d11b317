package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/agent"
)

// JSON-RPC error codes ACP uses beyond those jsonrpc2 defines.
const (
	CodeResourceNotFound = -32002
	CodeRequestCancelled = -32800
)

// notFoundError: a path is missing, or outside what the session may
// touch. ACP reports both as "resource not found" with data.uri, the
// path as the agent gave it (Zed does the same).
type notFoundError struct {
	path   string
	reason string
}

func (e *notFoundError) Error() string { return fmt.Sprintf("%s: %s", e.path, e.reason) }

// sessionError: the request names a session this connection does not know.
type sessionError struct{ id string }

func (e *sessionError) Error() string { return fmt.Sprintf("unknown session %q", e.id) }

// paramsError: the request's params are malformed.
type paramsError struct{ msg string }

func (e *paramsError) Error() string { return e.msg }

// beyondEndError: a read starts past the file's last row.
type beyondEndError struct {
	line    int64 // as asked, 1-based
	lastRow int64 // 1-based
	lastCol int   // bytes
}

func (e *beyondEndError) Error() string {
	return fmt.Sprintf("Attempting to read beyond the end of the file: line %d asked, the file ends at line %d:%d", e.line, e.lastRow, e.lastCol)
}

// zedData is the error data Zed sends for the same case.
func (e *beyondEndError) zedData() string {
	return fmt.Sprintf("Attempting to read beyond the end of the file, line %d:%d", e.lastRow, e.lastCol)
}

// textError: a file ACP's text methods cannot carry (binary, not UTF-8,
// too large).
type textError struct {
	key string
	msg string
}

func (e *textError) Error() string { return "/" + e.key + " " + e.msg }

// rpcError maps an error from the handlers or the merged view to the
// JSON-RPC error the agent receives; path is the path the agent gave.
// This is the one place the mapping happens.
func rpcError(err error, path string) *jsonrpc2.Error {
	var (
		notFound *notFoundError
		session  *sessionError
		params   *paramsError
		beyond   *beyondEndError
		text     *textError
	)
	switch {
	case errors.As(err, &notFound):
		return withData(CodeResourceNotFound, "Resource not found: "+err.Error(), map[string]string{"uri": notFound.path})
	case errors.Is(err, overlay.ErrOutside):
		return withData(CodeResourceNotFound, fmt.Sprintf("Resource not found: %s: outside the session's directories", path), map[string]string{"uri": path})
	case errors.Is(err, fs.ErrNotExist):
		return withData(CodeResourceNotFound, fmt.Sprintf("Resource not found: %s: no such file", path), map[string]string{"uri": path})
	case errors.As(err, &session):
		return withData(CodeResourceNotFound, "Resource not found: "+err.Error(), map[string]string{"sessionId": session.id})
	case errors.As(err, &params):
		return &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: "Invalid params: " + err.Error()}
	case errors.As(err, &beyond):
		return withData(jsonrpc2.CodeInvalidParams, beyond.Error(), beyond.zedData())
	case errors.As(err, &text):
		return &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: err.Error()}
	case errors.Is(err, agent.ErrTooLarge):
		return &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: fmt.Sprintf("%s is larger than %d MiB, the most draftfs serves through ACP", path, MaxFileSize>>20)}
	case errors.Is(err, context.Canceled):
		return &jsonrpc2.Error{Code: CodeRequestCancelled, Message: "Request cancelled"}
	}
	switch overlay.Errno(err) {
	case syscall.EISDIR:
		return &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: path + " is a directory, not a text file"}
	case syscall.ENOTDIR:
		return &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: path + ": a parent of it is a file, not a directory"}
	}
	return &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: "Internal error: " + err.Error()}
}

func withData(code int64, msg string, data any) *jsonrpc2.Error {
	e := &jsonrpc2.Error{Code: code, Message: msg}
	b, err := json.Marshal(data)
	if err == nil {
		e.Data = (*json.RawMessage)(&b)
	}
	return e
}
