//go:build linux

package fusefs

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/overlay"
)

// Pins: what keeps a file or directory reachable for descriptors still
// open on it once its name is unlinked or replaced through the mount.

// errNotPinned: the node has no pinned handle.
var errNotPinned = errors.New("not pinned")

// pinned runs fn on n's pinned handle; errNotPinned when there is none.
func (n *node) pinned(fn func(afero.File) (fs.FileInfo, error)) (fs.FileInfo, error) {
	r := n.rare.Load()
	if r == nil {
		return nil, errNotPinned
	}
	r.ioMu.RLock()
	defer r.ioMu.RUnlock()
	if r.pin == nil {
		return nil, errNotPinned
	}
	return fn(r.pin)
}

// holdsPin reports whether n has a pinned handle.
func (n *node) holdsPin() bool {
	r := n.rare.Load()
	if r == nil {
		return false
	}
	r.ioMu.RLock()
	defer r.ioMu.RUnlock()
	return r.pin != nil
}

// pinChild keeps the file at name in directory n reachable while its
// name is unlinked or replaced through the mount (a process may have it
// open: the kernel does not say), and returns what undoes that if the
// change fails. A file with other names stays reachable by them. A
// directory keeps its attributes (see nodeRare.gone).
func (n *node) pinChild(name string) (undo func()) {
	undo = func() {}
	in := n.GetChild(name)
	if in == nil {
		return undo
	}
	mode := in.StableAttr().Mode
	if mode != syscall.S_IFREG && mode != syscall.S_IFDIR {
		return undo
	}
	c := in.Operations().(*node)
	key, fi, errno := c.current()
	if errno != 0 {
		return undo
	}
	if mode == syscall.S_IFDIR {
		r := c.rareFields()
		r.ioMu.Lock()
		defer r.ioMu.Unlock()
		r.gone = fi
		return func() { r.ioMu.Lock(); r.gone = nil; r.ioMu.Unlock() }
	}
	if a, ok := fi.Sys().(*overlay.Attr); ok && a.Nlink > 1 {
		return undo
	}
	// Twins stand for the same object (see nodes.Table.TwinsOf), and followers
	// read it by its path (see nodes.Table.FollowersOf): each keeps it too.
	var undos []func()
	for _, t := range append(c.srv.nodes.TwinsOf(c), c) {
		undos = append(undos, t.pinAt(key))
		for _, f := range c.srv.nodes.FollowersOf(t) {
			undos = append(undos, f.pinAt(key))
		}
	}
	return func() {
		for _, u := range undos {
			u()
		}
	}
}

// pinAt pins the regular file key names (see pinChild) to n, and
// returns what undoes that. The engine's held handle reads the file
// after its name goes and takes writes, as a descriptor of an unlinked
// file does; twins' handles share what is written (see overlay.Fs.Hold).
func (n *node) pinAt(key string) (undo func()) {
	f, err := n.srv.fsys.Hold(key)
	if err != nil {
		return func() {}
	}
	r := n.rareFields()
	r.ioMu.Lock()
	defer r.ioMu.Unlock()
	if r.pin != nil {
		f.Close()
		return func() {}
	}
	r.pin = f
	n.srv.nodes.Hold(n, true)
	return func() { n.unpin(f) }
}

// goneInfo is what n's directory was when its name went (see gone);
// nil if it was no such directory.
func (n *node) goneInfo() fs.FileInfo {
	r := n.rare.Load()
	if r == nil {
		return nil
	}
	r.ioMu.RLock()
	defer r.ioMu.RUnlock()
	return r.gone
}

// unpin closes n's pinned handle if it is f (nil: whichever it is).
func (n *node) unpin(f afero.File) {
	r := n.rare.Load()
	if r == nil {
		return
	}
	r.ioMu.Lock()
	defer r.ioMu.Unlock()
	if r.pin != nil && (f == nil || r.pin == f) {
		r.pin.Close()
		r.pin = nil
		n.srv.nodes.Hold(n, false)
	}
}

// closePins closes the pinned handles of every node.
func (s *Server) closePins() {
	for _, n := range s.nodes.Holding() {
		n.unpin(nil)
	}
}
