//go:build linux

package fusefs

import (
	"context"
	"io/fs"
	"sync/atomic"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/draftfs/draftfs/fusefs/internal/nodes"
)

// Identity: which node stands for which object, by path and inode
// number, across lookups, renames, commits and replaced generations
// (see the package documentation, Identity).

// key is the node's path in the view, as go-fuse knows it; false when
// the node has no name any more (see nodes.Table.Named).
func (n *node) key() (string, bool) {
	_, key, ok := n.srv.nodes.Named(n)
	return key, ok
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
	return n.currentBy(n.srv.fsys.Lstat)
}

// currentBy is current with lstat describing the path: overlay's
// LstatMeta where the type, mode and owner are enough.
func (n *node) currentBy(lstat func(string) (fs.FileInfo, error)) (string, fs.FileInfo, syscall.Errno) {
	key, ok := n.key()
	if !ok {
		return "", nil, syscall.ENOENT
	}
	fi, err := lstat(key)
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

// newChild returns the node for fi, found at key below parent (see
// nodes.Table.Child), filling out with fi. The retry of an open
// answered ESTALE gets a fresh node (see moveAway).
func (s *Server) newChild(ctx context.Context, parent *gofs.Inode, key string, fi fs.FileInfo, out *fuse.Attr) *gofs.Inode {
	s.fill(out, fi)
	retry := s.retrying.Is(callerPid(ctx), key)
	in := s.nodes.Child(ctx, parent, key, fi, retry, s.fsys.Lstat, func() *node { return &node{srv: s} })
	if hook := testHookMade.Load(); hook != nil {
		(*hook)(key)
	}
	return in
}

// OnForget implements NodeOnForgetter: the kernel forgot n, and go-fuse
// drops it. Its pinned handle goes with it.
func (n *node) OnForget() {
	if hook := testHookForget.Load(); hook != nil {
		(*hook)(n)
	}
	n.MarkDropped()
	n.unpin(nil)
	// Its followers now follow the node it followed, for pinChild.
	n.srv.nodes.Forget(n, n.Next())
}

// Test hooks: testHookMade runs once a lookup of key took a node,
// before go-fuse registers it; testHookForget as go-fuse dropped a node,
// before the server's table hears of it.
var (
	testHookMade   atomic.Pointer[func(key string)]
	testHookForget atomic.Pointer[func(*node)]
)

// Follow records that a lookup gave n's name to m (for nodes.Table).
func (n *node) Follow(m *node) { n.rareFields().next.Store(m) }

// Next is the node n follows (for nodes.Table).
func (n *node) Next() *node {
	if r := n.rare.Load(); r != nil {
		return r.next.Load()
	}
	return nil
}
