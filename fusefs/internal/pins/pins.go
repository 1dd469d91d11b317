//go:build linux

// Package pins keeps what a FUSE node still serves once its object's
// last name was unlinked or replaced through the mount, while the
// kernel may have it open: a file's engine handle ([overlay.Fs.Hold]),
// which reads and writes the object after its name went, or a
// directory's attributes. The kernel never says when a file is closed,
// only when it forgets the node, so the node keeps its [Slot] until
// then. The engine keeps the object itself; what is FUSE-specific is
// keeping it per node until the kernel forgets the node, so it is not
// the engine's, and it translates no request: package fusefs decides
// what to pin and reads through the slot.
//
// # Locking
//
// Slot.mu protects the slot: I/O holds it shared while it uses the
// handle, keeping and closing the handle hold it exclusively. The
// callbacks Keep and Close take run with it held; engine calls on the
// handle run inside it.
package pins

import (
	"errors"
	"io/fs"
	"sync"

	"github.com/spf13/afero"
)

// ErrNotPinned: the slot has no pinned handle.
var ErrNotPinned = errors.New("not pinned")

// Slot is what a node keeps of its object once the object's name went
// through the mount. The zero Slot keeps nothing; a nil *Slot keeps
// nothing either, and its getters say so.
type Slot struct {
	mu sync.RWMutex // protects the following
	// f is the object's handle: the only way left to a file whose name
	// went.
	f afero.File
	// gone: a directory's attributes when its name went, for
	// descriptors still open on it.
	gone fs.FileInfo
}

// Use runs fn on the pinned handle, with s's lock held shared;
// ErrNotPinned when there is none.
func (s *Slot) Use(fn func(afero.File) error) error {
	if s == nil {
		return ErrNotPinned
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.f == nil {
		return ErrNotPinned
	}
	return fn(s.f)
}

// Holds reports whether s has a pinned handle.
func (s *Slot) Holds() bool {
	if s == nil {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.f != nil
}

// Keep makes f s's pinned handle, and runs held with s's lock held;
// false, leaving f to the caller, when s has one already.
func (s *Slot) Keep(f afero.File, held func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		return false
	}
	s.f = f
	held()
	return true
}

// Close closes s's pinned handle if it is f (nil: whichever it is), and
// then runs released with s's lock held.
func (s *Slot) Close(f afero.File, released func()) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil && (f == nil || s.f == f) {
		s.f.Close()
		s.f = nil
		released()
	}
}

// Gone is what s's directory was when its name went (see SetGone); nil
// if it was no such directory.
func (s *Slot) Gone() fs.FileInfo {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.gone
}

// SetGone records fi, a directory's attributes, as its name goes, and
// returns what undoes that if the removal fails.
func (s *Slot) SetGone(fi fs.FileInfo) (undo func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone = fi
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.gone = nil
	}
}
