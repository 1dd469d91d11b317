package fusefs

import (
	"strings"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/draftfs/draftfs/overlay"
)

// Feed polling: how often the consumer looks for changes right after
// some arrived, and at most when none did for a while.
const (
	pollBusy = 100 * time.Microsecond
	pollIdle = 2 * time.Millisecond
	busyFor  = 50 * time.Millisecond
)

// consume invalidates what the kernel caches of every change made to the
// view from outside the mount, until the subscription closes. It runs on
// its own goroutine. It takes changes off the feed only with feedMu held
// and applies them before releasing it, so that feedIdle can tell that
// every change published so far was applied; it polls rather than block
// in a receive, as a change received outside the lock would be applied
// unseen. No FUSE handler waits for feedMu (see feedIdle), so the kernel
// notifications made with it held cannot deadlock.
func (s *Server) consume() {
	lastBusy := time.Now()
	for {
		s.feedMu.Lock()
		applied, open := s.drain()
		s.feedMu.Unlock()
		if !open {
			return
		}
		if applied {
			lastBusy = time.Now()
		}
		if time.Since(lastBusy) < busyFor {
			time.Sleep(pollBusy)
		} else {
			time.Sleep(pollIdle)
		}
	}
}

// drain applies the changes queued on the feed, reporting whether any
// concerned the mount; open is false once the subscription closed. Must
// be called with s.feedMu held.
func (s *Server) drain() (applied, open bool) {
	for {
		select {
		case c, ok := <-s.sub.C:
			if !ok {
				s.feedClosed = true
				return applied, false
			}
			if s.apply(c) {
				applied = true
			}
		default:
			return applied, true
		}
	}
}

// feedIdle reports whether every change published on the feed so far
// has been applied: none is queued, the consumer is not applying one and
// still runs. It never waits: a consumer at work means "not idle".
func (s *Server) feedIdle() bool {
	if !s.feedMu.TryLock() {
		return false
	}
	defer s.feedMu.Unlock()
	return !s.feedClosed && len(s.sub.C) == 0
}

// apply invalidates what the kernel caches of one change, reporting
// whether the change concerned the mount.
func (s *Server) apply(c overlay.Change) bool {
	if c.Overflow {
		s.invalidateAll()
	}
	if c.Draft != "" && c.Draft != s.d.Name() {
		return c.Overflow // another draft's view
	}
	if c.Draft != "" && c.Source == overlay.SourceMount {
		return c.Overflow // made through the mount: the kernel saw it
	}
	switch c.Kind {
	case overlay.ChangeWrite, overlay.ChangeAttr:
		s.invalidateNode(c.Path)
	case overlay.ChangeRename:
		s.invalidateEntry(c.From)
		s.invalidateEntry(c.Path)
		s.moveNode(c.From, c.Path)
	default:
		// Creates, removals, commits, discards, undos, buffers and
		// disk changes may change what a name denotes.
		s.invalidateEntry(c.Path)
	}
	return true
}

// known returns the node go-fuse holds for key, nil when the kernel
// never looked it up or forgot it.
func (s *Server) known(key string) *gofs.Inode {
	in := &s.root.Inode
	if key == "" {
		return in
	}
	for _, elem := range strings.Split(key, "/") {
		if in = in.GetChild(elem); in == nil {
			return nil
		}
	}
	return in
}

func splitKey(key string) (parent, name string) {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return "", key
	}
	return key[:i], key[i+1:]
}

// invalidateNode drops the kernel's attributes and pages of key's node,
// unless an open already brought them up to date with what the path
// holds now.
func (s *Server) invalidateNode(key string) {
	in := s.known(key)
	if in == nil {
		return
	}
	n, ok := in.Operations().(*node)
	if !ok || in.IsDir() {
		// Listings are checked at each opendir; this drops the
		// attributes and the kernel's listing.
		in.NotifyContent(0, 0)
		return
	}
	var sig uint64
	if fi, err := s.fsys.Lstat(key); err == nil && inoOf(fi) == in.StableAttr().Ino {
		sig = contentSig(fi)
	}
	n.refresh(sig)
}

// invalidateEntry drops the kernel's entry for key (so the next access
// looks it up again), the node's attributes and pages, and the parent's
// attributes and listing.
func (s *Server) invalidateEntry(key string) {
	s.invalidateNode(key)
	if key == "" {
		return
	}
	parent, name := splitKey(key)
	if p := s.known(parent); p != nil {
		p.NotifyEntry(name)
		p.NotifyContent(0, 0)
	}
}

// moveNode follows a rename made elsewhere in go-fuse's tree, so nodes
// still open under the old name keep a path that names them. A node at
// the new name stays: the kernel may still send it requests, which its
// path then answers with ESTALE (a look-up again), not with the ENOENT
// of a node that lost its name.
func (s *Server) moveNode(from, to string) {
	fp, fname := splitKey(from)
	tp, tname := splitKey(to)
	src, dst := s.known(fp), s.known(tp)
	if src == nil || dst == nil || src.GetChild(fname) == nil {
		return
	}
	src.MvChild(fname, dst, tname, false)
}

// invalidateAll drops everything the kernel caches of the nodes go-fuse
// holds: after a feed overflow nothing else is known.
func (s *Server) invalidateAll() {
	todo := []*gofs.Inode{&s.root.Inode}
	for len(todo) > 0 {
		in := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if n, ok := in.Operations().(*node); ok && !in.IsDir() {
			n.refresh(0)
		} else {
			in.NotifyContent(0, 0)
		}
		for name, ch := range in.Children() {
			in.NotifyEntry(name)
			todo = append(todo, ch)
		}
	}
}
