//go:build linux

package fusefs

import (
	"strings"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/draftfs/draftfs/fusefs/internal/nodes"
	"github.com/draftfs/draftfs/overlay"
)

// consume invalidates what the kernel caches of every change made to the
// view from outside the mount, until the subscription closes, and tells
// the workspace what it applied, so that [overlay.Workspace.Settle]
// returns only once the kernel can no longer serve what a change
// replaced. It runs on its own goroutine.
func (s *Server) consume() { s.sub.Follow(s.apply, s.invalidateAll) }

// apply invalidates what the kernel caches of one change.
func (s *Server) apply(c overlay.Change) {
	if c.Overflow {
		s.invalidateAll()
	}
	if c.Draft != "" && c.Draft != s.d.Name() {
		return // another draft's view
	}
	if c.Draft != "" && c.Source == overlay.SourceMount {
		return // made through the mount: the kernel saw it
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
}

// invalidateNode drops the kernel's attributes and pages of key's node
// (a directory's: its listing).
func (s *Server) invalidateNode(key string) {
	in := nodes.At(&s.root.Inode, key)
	if in == nil {
		return
	}
	in.NotifyContent(0, 0)
}

// invalidateEntry drops the kernel's entry for key (so the next access
// looks it up again), the node's attributes and pages, and the parent's
// attributes and listing. A directory that key still names keeps its
// entry (see keepsEntry).
func (s *Server) invalidateEntry(key string) {
	in := nodes.At(&s.root.Inode, key)
	if in != nil {
		in.NotifyContent(0, 0)
	}
	if key == "" {
		return
	}
	if in != nil && s.keepsEntry(in, key) {
		if _, parent := in.Parent(); parent != nil {
			parent.NotifyContent(0, 0)
		}
		return
	}
	// The kernel may hold a failed lookup of the path's first element
	// below the deepest directory it knows (a change may create several
	// levels at once). NotifyEntry waits for the listings being read in
	// the directory, so the NotifyContent after it drops any listing
	// read before the change.
	p, rest := nodes.Deepest(&s.root.Inode, key)
	name, _, _ := strings.Cut(rest, "/")
	p.NotifyEntry(name)
	p.NotifyContent(0, 0)
}

// moveNode follows a rename made elsewhere in go-fuse's tree, so nodes
// still open under the old name keep a path that names them. A node at
// the new name stays: the kernel may still send it requests, which its
// path then answers with ESTALE (a look-up again), not with the ENOENT
// of a node that lost its name.
func (s *Server) moveNode(from, to string) {
	fp, fname := nodes.Split(from)
	tp, tname := nodes.Split(to)
	src, dst := nodes.At(&s.root.Inode, fp), nodes.At(&s.root.Inode, tp)
	if src == nil || dst == nil {
		return
	}
	c := src.GetChild(fname)
	if c == nil {
		return
	}
	if src.MvChild(fname, dst, tname, false) {
		c.Operations().(*node).lastKey.Store(&to)
	}
}

// invalidateAll drops everything the kernel caches of the nodes go-fuse
// holds: after a feed overflow nothing else is known.
func (s *Server) invalidateAll() {
	type known struct {
		in  *gofs.Inode
		key string
	}
	todo := []known{{&s.root.Inode, ""}}
	for len(todo) > 0 {
		k := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		k.in.NotifyContent(0, 0)
		for name, ch := range k.in.Children() {
			key := name
			if k.key != "" {
				key = k.key + "/" + name
			}
			if !s.keepsEntry(ch, key) {
				k.in.NotifyEntry(name)
			}
			todo = append(todo, known{ch, key})
		}
	}
}

// keepsEntry says whether the kernel may keep its entry for key, the
// name of directory node in: key still names in's directory, as a
// lookup would answer, or a directory whose number moved between the
// draft's range and the disk's (see renumbered). Dropping a directory's
// entry unhashes it in the kernel even while a process has it as its
// working directory, and getcwd there then fails with ENOENT, so a
// directory whose attributes or listing changed keeps its entry, and
// only those are dropped. Files are not looked at: their entries are
// dropped unasked, as that costs the invalidation no lookup in the
// engine.
func (s *Server) keepsEntry(in *gofs.Inode, key string) bool {
	if !in.IsDir() {
		return false
	}
	fi, err := s.fsys.Lstat(key)
	if err != nil || !fi.IsDir() {
		return false
	}
	return s.stable(fi) == in.StableAttr() || renumbered(in.StableAttr().Ino, inoOf(fi))
}

// renumbered says whether a directory with number was, now ino, is
// the view's same directory renumbered: one the draft made that a
// commit gave the disk's number, or one the draft took back from the
// disk (an undo, a disk directory removed under draft files). In the
// view it never went; its node serves it by its path with its old
// number. A disk directory replaced by another on disk is not.
func renumbered(was, ino uint64) bool {
	return overlay.DraftIno(was) != overlay.DraftIno(ino)
}

// renumberedChild is parent's child name when it serves the directory
// now numbered ino, renumbered: lookups and listings keep it, as a new
// node would make the kernel drop the entry keepsEntry kept.
func renumberedChild(parent *gofs.Inode, name string, ino uint64) *gofs.Inode {
	c := parent.GetChild(name)
	if c == nil || !c.IsDir() || !renumbered(c.StableAttr().Ino, ino) {
		return nil
	}
	return c
}

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
	if m, _, ok := n.named(); ok {
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
