//go:build linux

package fusefs

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/draftfs/draftfs/overlay"
)

// errnoOf maps an engine error to the errno the kernel gets: the wrapped
// errno when there is one, else the one matching an io/fs sentinel. It
// reports false for errors it cannot map, which the caller logs and
// answers with EIO.
func errnoOf(err error) (syscall.Errno, bool) {
	if err == nil {
		return 0, true
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno, true
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT, true
	case errors.Is(err, fs.ErrExist):
		return syscall.EEXIST, true
	case errors.Is(err, fs.ErrPermission), errors.Is(err, overlay.ErrOutside):
		return syscall.EACCES, true
	case errors.Is(err, fs.ErrInvalid):
		return syscall.EINVAL, true
	case errors.Is(err, fs.ErrClosed):
		return syscall.EBADF, true
	}
	return syscall.EIO, false
}

// errno maps err for the kernel, logging errors that say nothing more
// precise than EIO.
func (s *Server) errno(op string, err error) syscall.Errno {
	e, ok := errnoOf(err)
	if !ok {
		s.logf("fusefs: %s: %v", op, err)
	}
	return e
}
