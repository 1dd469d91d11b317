//go:build linux

package fusefs

import (
	"context"
	"io/fs"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/fusefs/internal/nodes"
	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/beneath"
)

var (
	_ = (gofs.NodeMkdirer)((*node)(nil))
	_ = (gofs.NodeMknoder)((*node)(nil))
	_ = (gofs.NodeRmdirer)((*node)(nil))
	_ = (gofs.NodeUnlinker)((*node)(nil))
	_ = (gofs.NodeRenamer)((*node)(nil))
	_ = (gofs.NodeSymlinker)((*node)(nil))
	_ = (gofs.NodeLinker)((*node)(nil))
	_ = (gofs.NodeOpendirHandler)((*node)(nil))

	_ = (gofs.FileReaddirenter)((*dirHandle)(nil))
	_ = (gofs.FileSeekdirer)((*dirHandle)(nil))
	_ = (gofs.FileLookuper)((*dirHandle)(nil))
	_ = (gofs.FileFsyncdirer)((*dirHandle)(nil))
)

// Mkdir implements NodeMkdirer.
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return n.make(ctx, "mkdir", name, out, func(v *overlay.Fs, key string) error { return v.Mkdir(key, fileMode(mode)) })
}

// Mknod implements NodeMknoder: FIFOs, sockets (bind(2) of a Unix
// socket makes one) and device nodes (the kernel lets only callers
// with CAP_MKNOD ask) are draft objects; the kernel serves their I/O.
func (n *node) Mknod(ctx context.Context, name string, mode, dev uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return n.make(ctx, "mknod", name, out, func(v *overlay.Fs, key string) error {
		return v.Mknod(key, beneath.FileMode(mode), uint64(dev))
	})
}

// Symlink implements NodeSymlinker.
func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return n.make(ctx, "symlink", name, out, func(v *overlay.Fs, key string) error { return v.Symlink(target, key) })
}

// make has mk make a new object at name in directory n (op names the
// operation in the log), by the process behind ctx, and finishes it
// (see created).
func (n *node) make(ctx context.Context, op, name string, out *fuse.EntryOut, mk func(v *overlay.Fs, key string) error) (*gofs.Inode, syscall.Errno) {
	key, ok := n.childKey(name)
	if !ok {
		return nil, syscall.ENOENT
	}
	if err := mk(n.srv.as(ctx), key); err != nil {
		return nil, n.srv.errno(op, err)
	}
	child, _, errno := n.srv.created(ctx, &n.Inode, key, out)
	return child, errno
}

// created finishes a new object at key: owned by the caller, described
// in out.
func (s *Server) created(ctx context.Context, parent *gofs.Inode, key string, out *fuse.EntryOut) (*gofs.Inode, fs.FileInfo, syscall.Errno) {
	if errno := s.chown(ctx, key); errno != 0 {
		return nil, nil, errno
	}
	fi, err := s.fsys.Lstat(key)
	if err != nil {
		return nil, nil, s.errno("create", err)
	}
	return s.newChild(ctx, parent, key, fi, &out.Attr), fi, 0
}

// chown gives a new object at key to the caller, when that is not the
// server's own user (the engine creates objects as the server).
func (s *Server) chown(ctx context.Context, key string) syscall.Errno {
	caller, ok := fuse.FromContext(ctx)
	if !ok || (caller.Uid == s.uid && caller.Gid == s.gid) {
		return 0
	}
	uid, gid := int(caller.Uid), int(caller.Gid)
	if err := s.as(ctx).Setattr(key, overlay.Attrs{Uid: &uid, Gid: &gid}); err != nil {
		return s.errno("chown", err)
	}
	return 0
}

// Unlink implements NodeUnlinker. Open handles keep working.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	key, ok := n.childKey(name)
	if !ok {
		return syscall.ENOENT
	}
	child := n.GetChild(name)
	undo := n.pinChild(name)
	if err := n.srv.as(ctx).Unlink(key); err != nil {
		undo()
		return n.srv.errno("unlink", err)
	}
	n.srv.linksChanged(child)
	return 0
}

// Rmdir implements NodeRmdirer.
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	key, ok := n.childKey(name)
	if !ok {
		return syscall.ENOENT
	}
	undo := n.pinChild(name)
	if err := n.srv.as(ctx).Rmdir(key); err != nil {
		undo()
		return n.srv.errno("rmdir", err)
	}
	return 0
}

// Rename implements NodeRenamer, with RENAME_NOREPLACE and
// RENAME_EXCHANGE.
func (n *node) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	var rf overlay.RenameFlags
	if flags&unix.RENAME_NOREPLACE != 0 {
		rf |= overlay.RenameNoReplace
	}
	if flags&unix.RENAME_EXCHANGE != 0 {
		rf |= overlay.RenameExchange
	}
	if flags&^uint32(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE) != 0 {
		return syscall.EINVAL
	}
	from, ok1 := n.childKey(name)
	to, ok2 := np.childKey(newName)
	if !ok1 || !ok2 {
		return syscall.ENOENT
	}
	moved, replaced := n.GetChild(name), np.GetChild(newName)
	undo := func() {}
	if rf&overlay.RenameExchange == 0 {
		undo = np.pinChild(newName)
	}
	if err := n.srv.as(ctx).Rename2(from, to, rf); err != nil {
		undo()
		return n.srv.errno("rename", err)
	}
	if moved != nil {
		moved.Operations().(*node).SetKey(to)
		if rf&overlay.RenameExchange != 0 && replaced != nil {
			replaced.Operations().(*node).SetKey(from)
		}
	}
	n.srv.linksChanged(moved, replaced)
	return 0
}

// Link implements NodeLinker.
func (n *node) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	tn, ok := target.(*node)
	if !ok {
		return nil, syscall.EXDEV
	}
	from, ok1 := tn.key()
	to, ok2 := n.childKey(name)
	if !ok1 || !ok2 {
		return nil, syscall.ENOENT
	}
	if err := n.srv.as(ctx).Link(from, to); err != nil {
		return nil, n.srv.errno("link", err)
	}
	fi, err := n.srv.fsys.Lstat(to)
	if err != nil {
		return nil, n.srv.errno("link", err)
	}
	if nodes.Ino(fi) != tn.StableAttr().Ino {
		// A disk file with several names got a draft inode of its own
		// to link: the kernel must look its old name up again. That
		// takes the directory lock the kernel holds now: not from here.
		go n.srv.cache.Entry(from)
	}
	n.srv.linksChanged(&tn.Inode)
	return n.srv.newChild(ctx, &n.Inode, to, fi, &out.Attr), 0
}

// OpendirHandle implements NodeOpendirHandler. The kernel keeps
// listings across opens (FOPEN_CACHE_DIR): changes made through the
// mount reset them, the feed consumer drops those of directories changed
// elsewhere. The handle reads its listing at most once, so its offsets
// stay stable.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	key, ok := n.key()
	if !ok {
		return nil, 0, syscall.ENOENT
	}
	return &dirHandle{n: n, key: key}, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}

// dirHandle is an open directory.
type dirHandle struct {
	n   *node  // read only
	key string // read only: the directory's path at the open

	mu     sync.Mutex // protects the following
	ents   []fs.DirEntry
	loaded bool // ents holds the listing
	pos    int  // next entry: 0 is ".", 1 "..", then ents
	// last is the entry Readdirent returned last, and what it said of
	// it (see infoMeta).
	last     fs.DirEntry
	lastInfo fs.FileInfo
	served   bool // an entry was returned
}

// Readdirent implements FileReaddirenter. Entry i has offset i+1.
func (h *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last, h.lastInfo = nil, nil
	if !h.loaded {
		ents, err := h.n.srv.listings.read(h.n, h.key, h.pos == 0, h.n.srv.fsys)
		if err != nil {
			return nil, h.n.srv.errno("readdir", err)
		}
		h.ents, h.loaded = ents, true
	}
	for {
		pos := h.pos
		switch {
		case pos == 0:
			h.pos, h.served = 1, true
			return &fuse.DirEntry{Name: ".", Mode: syscall.S_IFDIR, Ino: h.n.StableAttr().Ino, Off: 1}, 0
		case pos == 1:
			h.pos, h.served = 2, true
			ino := h.n.StableAttr().Ino
			if _, parent := h.n.Parent(); parent != nil {
				ino = parent.StableAttr().Ino
			}
			return &fuse.DirEntry{Name: "..", Mode: syscall.S_IFDIR, Ino: ino, Off: 2}, 0
		case pos-2 >= len(h.ents):
			if !h.served {
				// An empty reply: the kernel's listing is complete.
				h.n.srv.listings.done(h.n)
			}
			return nil, 0
		}
		h.pos++
		fi, err := infoMeta(h.ents[pos-2])
		if err != nil {
			continue // removed since the listing was read
		}
		h.last, h.lastInfo, h.served = h.ents[pos-2], fi, true
		return &fuse.DirEntry{Name: fi.Name(), Mode: beneath.UnixMode(fi.Mode()), Ino: nodes.Ino(fi), Off: uint64(pos + 1)}, 0
	}
}

// Seekdir implements FileSeekdirer: off is an offset Readdirent gave.
func (h *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pos = int(off) // past the end: Readdirent ends the listing
	h.last, h.lastInfo = nil, nil
	return 0
}

// Lookup implements FileLookuper for READDIRPLUS, reusing what
// Readdirent just read.
func (h *dirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	h.mu.Lock()
	de, fi := h.last, h.lastInfo
	h.mu.Unlock()
	key, ok := h.n.childKey(name)
	if fi == nil || fi.Name() != name || !ok {
		return h.n.Lookup(ctx, name, out)
	}
	if h.n.srv.nodes.Listed(&h.n.Inode, name, fi) && !h.n.srv.retrying.Is(callerPid(ctx), key) {
		// Already looked up (git lists the directories whose files it
		// stat'ed): the entry goes without a node ID, which the kernel
		// takes as a plain directory entry, its lookup count unchanged.
		// Any error does that; the node and its attributes stay (a
		// change to them is invalidated, not left to listings).
		return nil, syscall.EEXIST
	}
	fi, err := de.Info() // the attributes the kernel is given
	if err != nil {
		return h.n.Lookup(ctx, name, out)
	}
	return h.n.srv.newChild(ctx, &h.n.Inode, key, fi, &out.Attr), 0
}

// infoMeta describes a listed entry as far as a listing needs: its name,
// type and inode number, and whether the kernel knows it already (see
// Lookup), which for a draft file the engine answers without a system
// call; the whole Info only where the kernel is told the attributes.
func infoMeta(de fs.DirEntry) (fs.FileInfo, error) {
	if m, ok := de.(interface{ InfoMeta() (fs.FileInfo, error) }); ok {
		return m.InfoMeta()
	}
	return de.Info()
}

// Fsyncdir implements FileFsyncdirer: the draft's metadata is made
// durable.
func (h *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return h.n.srv.errno("fsyncdir", h.n.srv.fsys.Sync())
}
