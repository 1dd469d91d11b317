package mcp

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/agent"
)

// toolError is a message for the client, shown as the text of a tool
// result with isError set.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func errorf(format string, args ...any) error {
	return &toolError{msg: fmt.Sprintf(format, args...)}
}

// errnoText is how Node (libuv) describes an errno; the reference server
// shows file-system errors in Node's words, so draftfs does too.
var errnoText = map[syscall.Errno]string{
	syscall.ENOENT:       "no such file or directory",
	syscall.EEXIST:       "file already exists",
	syscall.ENOTDIR:      "not a directory",
	syscall.EISDIR:       "illegal operation on a directory",
	syscall.EACCES:       "permission denied",
	syscall.EPERM:        "operation not permitted",
	syscall.ENOTEMPTY:    "directory not empty",
	syscall.EXDEV:        "cross-device link not permitted",
	syscall.EINVAL:       "invalid argument",
	syscall.ELOOP:        "too many symbolic links encountered",
	syscall.ENAMETOOLONG: "name too long",
	syscall.ENOSPC:       "no space left on device",
	syscall.EROFS:        "read-only file system",
	syscall.EBUSY:        "resource busy or locked",
	syscall.EMFILE:       "too many open files",
	syscall.EIO:          "i/o error",
	syscall.EBADF:        "bad file descriptor",
	syscall.EFBIG:        "file too large",
}

// fsError is the one place errors of file operations become messages.
// Errors that stand for an errno read as Node's fs module would put them,
// since the reference server shows them so: "ENOENT: no such file or
// directory, open '/w/a.txt'", with "'from' -> 'to'" for two paths. Tool
// errors pass through; other errors keep their own text.
func fsError(err error, op string, paths ...string) error {
	var te *toolError
	switch {
	case errors.As(err, &te):
		return err
	case errors.Is(err, agent.ErrTooLarge), errors.Is(err, agent.ErrWriteTooLarge), errors.Is(err, agent.ErrNotRegular), errors.Is(err, overlay.ErrOutside):
		return &toolError{msg: err.Error()}
	}
	errno := errnoOf(err)
	if errno == 0 {
		return err
	}
	desc, ok := errnoText[errno]
	if !ok {
		desc = errno.Error()
	}
	code := unix.ErrnoName(errno)
	if code == "" {
		code = fmt.Sprintf("errno %d", int(errno))
	}
	msg := code + ": " + desc + ", " + op
	if len(paths) > 0 {
		quoted := make([]string, len(paths))
		for i, p := range paths {
			quoted[i] = "'" + p + "'"
		}
		msg += " " + strings.Join(quoted, " -> ")
	}
	return &toolError{msg: msg}
}

// errnoOf is the errno an error stands for (an errno it wraps, or the
// one of an io/fs sentinel), 0 when it stands for none.
func errnoOf(err error) syscall.Errno {
	if err == nil || errors.Is(err, overlay.ErrOutside) {
		return 0
	}
	errno := overlay.Errno(err)
	if errno == syscall.EIO && !errors.Is(err, syscall.EIO) {
		return 0
	}
	return errno
}
