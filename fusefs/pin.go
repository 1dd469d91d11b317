//go:build linux

package fusefs

import (
	"syscall"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/fusefs/internal/pins"
	"github.com/draftfs/draftfs/overlay"
)

// Pins: what keeps a file or directory reachable for descriptors still
// open on it once its name is unlinked or replaced through the mount.

// Slot is n's pin slot (for nodes.Table); nil when n never needed its
// rare fields.
func (n *node) Slot() *pins.Slot {
	if r := n.rare.Load(); r != nil {
		return &r.pin
	}
	return nil
}

// pinChild keeps the file at name in directory n reachable while its
// name is unlinked or replaced through the mount (a process may have it
// open: the kernel does not say), and returns what undoes that if the
// change fails. A file with other names stays reachable by them. A
// directory keeps its attributes (see pins.Slot.Gone).
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
	key, fi, errno := c.currentBy(c.srv.fsys.LstatMeta) // a file's links are enough
	if errno != 0 {
		return undo
	}
	if mode == syscall.S_IFDIR {
		return c.rareFields().pin.SetGone(fi)
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
	if !n.rareFields().pin.Keep(f, func() { n.srv.nodes.Hold(n, true) }) {
		f.Close()
		return func() {}
	}
	return func() { n.unpin(f) }
}

// unpin closes n's pinned handle if it is f (nil: whichever it is).
func (n *node) unpin(f afero.File) {
	n.Slot().Close(f, func() { n.srv.nodes.Hold(n, false) })
}

// closePins closes the pinned handles of every node.
func (s *Server) closePins() {
	for _, n := range s.nodes.Holding() {
		n.unpin(nil)
	}
}
