//go:build linux

package fusefs

import gofs "github.com/hanwen/go-fuse/v2/fs"

// consume invalidates what the kernel caches of every change made to the
// view from outside the mount, until the subscription closes, and tells
// the workspace what it applied, so that [overlay.Workspace.Settle]
// returns only once the kernel can no longer serve what a change
// replaced (package invalidate decides what each change drops). It runs
// on its own goroutine.
func (s *Server) consume() { s.sub.Follow(s.cache.Apply, s.cache.Flush, s.cache.All) }

// changedBehind tells the kernel that n's file changed through n (a
// descriptor open on it) while other nodes stand for it too: twins of
// other generations (see nodes.Table.TwinsOf), or a node a lookup gave n's name to.
// Their attributes and pages are dropped, so their opens see the change
// (only changes from outside the mount come on the feed).
func (n *node) changedBehind() {
	var others []*gofs.Inode
	for _, t := range n.srv.nodes.TwinsOf(n) {
		others = append(others, &t.Inode)
	}
	if m, _, ok := n.srv.nodes.Named(n); ok {
		if name, parent := m.Parent(); parent != nil {
			if c := parent.GetChild(name); c != nil && c != &n.Inode {
				others = append(others, c)
			}
		}
	}
	if len(others) == 0 {
		return
	}
	// Attributes now: that takes no lock in the kernel, and a new size
	// or mtime makes it drop the pages itself (AUTO_INVAL_DATA). Pages
	// from another goroutine: dropping them waits for page locks that
	// I/O the kernel has this request serve may hold.
	for _, o := range others {
		o.NotifyContent(-1, 0)
	}
	go func() {
		for _, o := range others {
			o.NotifyContent(0, 0)
		}
	}()
}

// linksChanged drops the attributes the kernel caches for the twins of
// in (see nodes.Table.TwinsOf), whose link count or ctime changed through in: the
// kernel updates in's own.
func (s *Server) linksChanged(ins ...*gofs.Inode) {
	for _, in := range ins {
		if in == nil {
			continue
		}
		for _, t := range s.nodes.TwinsOf(in.Operations().(*node)) {
			t.NotifyContent(-1, 0)
		}
	}
}
