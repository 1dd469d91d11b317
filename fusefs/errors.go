//go:build linux

package fusefs

import (
	"syscall"

	"github.com/draftfs/draftfs/overlay"
)

// errno maps err for the kernel with the engine's one mapping
// ([overlay.ErrnoOf]), logging errors that say nothing more precise than
// EIO.
func (s *Server) errno(op string, err error) syscall.Errno {
	e, ok := overlay.ErrnoOf(err)
	if !ok {
		s.logf("fusefs: %s: %v", op, err)
	}
	return e
}
