//go:build linux

package fusefs

import (
	"context"
	"io/fs"
	"path"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/draftfs/draftfs/fusefs/internal/nodes"
)

// Identity: which node stands for which object, by path and inode
// number, across lookups, renames, commits and replaced generations
// (see the package documentation, Identity).

// key is the node's path in the view, as go-fuse knows it; false when
// the node has no name any more (unlinked while open). A node whose name
// a lookup gave to another node of its type (the path's object got a
// new inode number from a commit, or a fresh node from
// nodes.Table.Replace) follows that one, so descriptors open on it keep
// working.
func (n *node) key() (string, bool) {
	_, key, ok := n.named()
	return key, ok
}

// named returns the node whose name n's key is, n or one that took it
// (see key), with that key; false when there is none.
func (n *node) named() (*node, string, bool) {
	if key, ok := nodes.Path(&n.Inode); ok {
		return n, key, true
	}
	if n.slot().Holds() || n.slot().Gone() != nil {
		return nil, "", false // its last name went through the mount
	}
	return n.srv.nodes.Successor(n)
}

// childKey is the path of name in directory n.
func (n *node) childKey(name string) (string, bool) {
	key, ok := n.key()
	if !ok {
		return "", false
	}
	if key == "" {
		return name, true
	}
	return key + "/" + name, true
}

// current describes what n's path holds now. ENOENT when n has no name
// any more, or its path holds nothing or an object of another type (a
// node's type never changes). An object of the same type that replaced
// n's elsewhere (a commit gives a file a new inode number) is taken for
// n's: reads and writes by its path reach it, as on a network file
// system; the change feed makes the kernel look the path up again.
func (n *node) current() (string, fs.FileInfo, syscall.Errno) {
	key, ok := n.key()
	if !ok {
		return "", nil, syscall.ENOENT
	}
	fi, err := n.srv.fsys.Lstat(key)
	if err != nil {
		e := n.srv.errno("lstat", err)
		if e == syscall.ENOTDIR {
			e = syscall.ENOENT
		}
		return key, nil, e
	}
	if !n.IsRoot() && nodes.Type(fi.Mode()) != n.StableAttr().Mode {
		return key, nil, syscall.ENOENT
	}
	n.srv.nodes.Claim(n)
	return key, fi, 0
}

// newChild returns a new node for fi, found at key below parent,
// filling out with fi. go-fuse keeps the node it already has for the
// same identity (inode number, type and generation) and drops this one,
// unless the node it has is only known under a name that no longer
// names its object (moved elsewhere by the engine): that name may still
// be in the kernel's cache, and opens through it must not reach the
// object, so the object gets a fresh node (a new generation) here. The
// retry of an open answered ESTALE gets a fresh node too (see moveAway).
func (s *Server) newChild(ctx context.Context, parent *gofs.Inode, key string, fi fs.FileInfo, out *fuse.Attr) *gofs.Inode {
	s.fill(out, fi)
	ino := nodes.Ino(fi)
	if fi.IsDir() {
		if c := nodes.RenumberedChild(parent, path.Base(key), ino); c != nil {
			return c
		}
	}
	known, ok := s.nodes.Known(ino, s.retrying.Is(callerPid(ctx), key))
	if ok && !known.forgotten.Load() && known.StableAttr().Gen == s.nodes.Gen(ino) {
		kkey, ok := known.key()
		switch {
		case !ok && known.slot().Holds():
			// Its object was unlinked through the mount: the disk gave
			// the inode number to another file since (a commit writes
			// new files), which must not read or write the pinned one.
			s.nodes.Replace(known.StableAttr())
		case ok && kkey != key:
			if kfi, err := s.fsys.Lstat(kkey); err != nil || nodes.Ino(kfi) != ino {
				s.nodes.Replace(known.StableAttr())
			}
		}
	}
	sa := s.nodes.Stable(fi)
	_, name := nodes.Split(key)
	old := parent.GetChild(name)
	in := parent.NewInode(ctx, &node{srv: s}, sa)
	// Recorded once go-fuse set it up: others read its identity.
	n := in.Operations().(*node)
	n.setKey(key)
	var o *node
	took := old != nil && old != in && old.StableAttr().Mode == sa.Mode
	if took {
		o = old.Operations().(*node)
	}
	s.nodes.Added(n, sa, o, took)
	return in
}

// OnForget implements NodeOnForgetter: the kernel forgot n, and go-fuse
// drops it. Its pinned handle goes with it.
func (n *node) OnForget() {
	n.forgotten.Store(true)
	n.unpin(nil)
	// Its followers now follow the node it followed, for pinChild.
	n.srv.nodes.Forget(n, n.Next())
}

// Forgotten reports whether go-fuse dropped n (for nodes.Table).
func (n *node) Forgotten() bool { return n.forgotten.Load() }

// Follow records that a lookup gave n's name to m (for nodes.Table).
func (n *node) Follow(m *node) { n.rareFields().next.Store(m) }

// Next is the node n follows (for nodes.Table).
func (n *node) Next() *node {
	if r := n.rare.Load(); r != nil {
		return r.next.Load()
	}
	return nil
}

// setKey records the path key a lookup or a rename gave n.
func (n *node) setKey(key string) { n.lastKey.Store(&key) }

// LastKey is the path a lookup or a rename last gave n (for
// nodes.Table).
func (n *node) LastKey() (string, bool) {
	if k := n.lastKey.Load(); k != nil {
		return *k, true
	}
	return "", false
}
