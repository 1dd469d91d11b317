//go:build linux

package fusefs

import (
	"context"
	"sync/atomic"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/draftfs/draftfs/fusefs/internal/nodes"
	"github.com/draftfs/draftfs/fusefs/internal/passthrough"
	"github.com/draftfs/draftfs/fusefs/internal/pins"
)

// node is one file, directory or symlink of the merged view as the
// kernel knows it. Its path is the one go-fuse keeps from lookups and
// renames; every operation asks the engine by that path.
type node struct {
	gofs.Inode
	srv *Server // read only

	nodes.Record // its path and whether go-fuse dropped it, for the table
	// rare holds what few nodes use, made the first time one needs it
	// (see rareFields): go-fuse keeps a node for every inode the kernel
	// references, so the common node stays small. Set once.
	rare atomic.Pointer[nodeRare]
}

// nodeRare is what a node needs once a name of its was unlinked,
// replaced or given to another node, or once it was opened in
// passthrough mode.
type nodeRare struct {
	// pin is what the node keeps of its object once the object's name
	// was unlinked or replaced through the mount while the kernel may
	// still have it open (see pinChild), until the kernel forgets the
	// node.
	pin pins.Slot
	// next is the node a lookup gave this node's name to (see key).
	next atomic.Pointer[node]

	io passthrough.Node // passthrough mode: the node's open files
}

// rareFields returns n's rare fields, made if it had none yet.
func (n *node) rareFields() *nodeRare {
	if r := n.rare.Load(); r != nil {
		return r
	}
	n.rare.CompareAndSwap(nil, new(nodeRare))
	return n.rare.Load()
}

var (
	_ = (gofs.InodeEmbedder)((*node)(nil))
	_ = (gofs.NodeOnForgetter)((*node)(nil))
	_ = (gofs.NodeLookuper)((*node)(nil))
	_ = (gofs.NodeGetattrer)((*node)(nil))
	_ = (gofs.NodeSetattrer)((*node)(nil))
	_ = (gofs.NodeReadlinker)((*node)(nil))
	_ = (gofs.NodeStatfser)((*node)(nil))
)

// Lookup implements NodeLookuper.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	key, ok := n.childKey(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	fi, err := n.srv.fsys.Lstat(key)
	if err != nil {
		return nil, n.srv.errno("lookup", err)
	}
	return n.srv.newChild(ctx, &n.Inode, key, fi, &out.Attr), 0
}

// Readlink implements NodeReadlinker.
func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	key, ok := n.key()
	if !ok {
		// Replaced or removed through the mount; not ESTALE, which the
		// kernel would retry into the same answer.
		return nil, syscall.ENOENT
	}
	target, err := n.srv.fsys.Readlink(key)
	if err != nil {
		return nil, n.srv.errno("readlink", err)
	}
	return []byte(target), 0
}

// Statfs implements NodeStatfser with the workspace disk's numbers.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	var st syscall.Statfs_t
	if err := syscall.Statfs(n.srv.d.Workspace().Root(), &st); err != nil {
		return n.srv.errno("statfs", err)
	}
	out.FromStatfsT(&st)
	return 0
}
