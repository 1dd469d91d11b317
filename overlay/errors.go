//go:build linux

package overlay

import (
	"errors"
	"io/fs"
	"syscall"
)

// Review errors. They are wrapped with detail; compare with errors.Is.
var (
	// ErrConflict: the commit met changes the user made since the agent's
	// copy-up that do not merge cleanly. Nothing was written.
	ErrConflict = errors.New("conflicting changes")
	// ErrNothingToUndo: there is no commit left to undo.
	ErrNothingToUndo = errors.New("nothing to undo")
	// ErrDiskChanged: files a commit wrote changed on disk since, so undo
	// would lose them.
	ErrDiskChanged = errors.New("files changed on disk since the commit")
	// ErrOutside: a path given by an agent-facing caller leaves the
	// workspace (.., an absolute path elsewhere, or a symlink escape).
	ErrOutside = errors.New("path is outside the workspace")
	// ErrNoHunk: a hunk ID names no hunk of the draft's diff now: the
	// draft or the user's file changed since it was listed.
	ErrNoHunk = errors.New("no such hunk")
	// ErrNoCheckpoint: the draft's timeline has no such checkpoint.
	ErrNoCheckpoint = errors.New("no such checkpoint")
	// ErrCorrupt: a state file cannot be read.
	ErrCorrupt = errors.New("draft state is corrupt")
)

func pathErr(op, path string, errno syscall.Errno) error {
	return &fs.PathError{Op: op, Path: "/" + path, Err: errno}
}

// Errno reports the errno an error from this package stands for, as a
// front end must report it: the wrapped errno when there is one, else the
// one matching an io/fs sentinel, else EIO.
func Errno(err error) syscall.Errno {
	e, _ := ErrnoOf(err)
	return e
}

// ErrnoOf is [Errno] that also reports whether the error said anything
// more precise than EIO, so that a front end can log the ones that did
// not. It is the one errno mapping of the engine's errors: fusefs answers
// the kernel with it, the protocols derive their codes from it.
func ErrnoOf(err error) (syscall.Errno, bool) {
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
	case errors.Is(err, fs.ErrPermission), errors.Is(err, ErrOutside):
		return syscall.EACCES, true
	case errors.Is(err, fs.ErrInvalid):
		return syscall.EINVAL, true
	case errors.Is(err, fs.ErrClosed):
		return syscall.EBADF, true
	}
	return syscall.EIO, false
}
