//go:build linux

package fusefs

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/beneath"
)

// node is one file, directory or symlink of the merged view as the
// kernel knows it. Its path is the one go-fuse keeps from lookups and
// renames; every operation asks the engine by that path.
type node struct {
	gofs.Inode
	srv *Server // read only

	// ioMu: reads and writes hold it shared while they use pin, setting
	// or closing it hold it exclusively.
	ioMu sync.RWMutex
	// pin is the object's handle once its name was unlinked or replaced
	// through the mount while the kernel may still have it open: the
	// only way left to it (see pinChild). Kept until the kernel forgets
	// the node.
	pin afero.File
	// gone: a directory's attributes when its name was removed or
	// replaced through the mount, for descriptors still open on it.
	gone fs.FileInfo
	// next is the node a lookup gave this node's name to (see key).
	next atomic.Pointer[node]
	// lastKey is the path a lookup or a rename last gave the node: where
	// to look for its object once the kernel forgot it (see named).
	lastKey atomic.Pointer[string]
	// forgotten: go-fuse dropped the node (OnForget); it never comes
	// back, a later lookup makes a new node.
	forgotten atomic.Bool

	ioStateMu sync.Mutex
	io        ioState // passthrough mode: the node's open files
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

// key is the node's path in the view, as go-fuse knows it; false when
// the node has no name any more (unlinked while open). A node whose name
// a lookup gave to another node of its type (the path's object got a
// new inode number from a commit, or a fresh node from Server.replace)
// follows that one, so descriptors open on it keep working.
func (n *node) key() (string, bool) {
	_, key, ok := n.named()
	return key, ok
}

// named returns the node whose name n's key is, n or one that took it
// (see key), with that key; false when there is none.
func (n *node) named() (*node, string, bool) {
	if key, ok := n.treeKey(); ok {
		return n, key, true
	}
	if n.holdsPin() || n.goneInfo() != nil {
		return nil, "", false // its last name went through the mount
	}
	var last *node
	for hops, m := 0, n.next.Load(); m != nil && hops < maxHops; hops, m = hops+1, m.next.Load() {
		if m.forgotten.Load() {
			// go-fuse may have made a new node of the same identity
			// since, which no lookup linked from m.
			if k := n.srv.live(m.StableAttr()); k != nil {
				m = k
			}
		}
		if key, ok := m.treeKey(); ok {
			return m, key, true
		}
		last = m
	}
	// The kernel forgot the node that took n's name, and no lookup took
	// it on from there: follow the path where that node was last.
	if last != nil {
		if key := last.lastKey.Load(); key != nil {
			return last, *key, true
		}
	}
	return nil, "", false
}

// live is the node go-fuse keeps for identity sa, if it still keeps
// one.
func (s *Server) live(sa gofs.StableAttr) *node {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.byIno[sa.Ino]; k != nil && k.StableAttr() == sa && !k.forgotten.Load() {
		return k
	}
	return nil
}

// changedBehind tells the kernel that n's file changed through n (a
// descriptor open on it) while other nodes stand for it too: twins of
// other generations (see twinsOf), or a node a lookup gave n's name to.
// Their attributes and pages are dropped, so their opens see the change
// (only changes from outside the mount come on the feed).
func (n *node) changedBehind() {
	var others []*gofs.Inode
	for _, t := range n.srv.twinsOf(n) {
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

// maxHops bounds how far key follows nodes that took a name in turn.
const maxHops = 8

// treeKey is the node's path in go-fuse's tree. A lookup that puts
// another node at a name leaves the node there believing it is still
// the name's (go-fuse does not take the name from it): such a name
// counts as lost.
func (n *node) treeKey() (string, bool) {
	root := n.Root()
	var elems []string
	for in := &n.Inode; in != root; {
		name, parent := in.Parent()
		if parent == nil {
			return "", false
		}
		if parent.GetChild(name) != in {
			return "", false // another node took the name
		}
		elems = append(elems, name)
		in = parent
	}
	slices.Reverse(elems)
	return strings.Join(elems, "/"), true
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
	if !n.IsRoot() && typeOf(fi.Mode()) != n.StableAttr().Mode {
		return key, nil, syscall.ENOENT
	}
	n.srv.claim(n)
	return key, fi, 0
}

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

// Getattr implements NodeGetattrer. A node whose path no longer names it
// (unlinked while open, say) is described through its open handle.
func (n *node) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	_, fi, errno := n.current()
	if errno != 0 {
		var err error
		if fi, err = n.pinned(func(f afero.File) (fs.FileInfo, error) { return f.Stat() }); err != nil {
			if fi = n.goneInfo(); fi == nil {
				return errno
			}
		}
	}
	n.srv.fill(&out.Attr, fi)
	out.Ino = n.StableAttr().Ino // the path may hold a replacement (see current)
	return 0
}

// Setattr implements NodeSetattrer: chmod, chown, utimens and truncate.
func (n *node) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	var a overlay.Attrs
	if m, ok := in.GetMode(); ok {
		mode := fileMode(m)
		a.Mode = &mode
	}
	if u, ok := in.GetUID(); ok {
		uid := int(u)
		a.Uid = &uid
	}
	if g, ok := in.GetGID(); ok {
		gid := int(g)
		a.Gid = &gid
	}
	if sz, ok := in.GetSize(); ok {
		size := int64(sz)
		a.Size = &size
	}
	if t, ok := in.GetATime(); ok {
		a.Atime = &t
	}
	if t, ok := in.GetMTime(); ok {
		a.Mtime = &t
	}
	key, cur, errno := n.current()
	if errno != 0 {
		// Only ftruncate of an unlinked open file can still be served.
		if a.Size == nil || a.Mode != nil || a.Uid != nil || a.Gid != nil || a.Atime != nil || a.Mtime != nil {
			return errno
		}
		fi, err := n.pinned(func(f afero.File) (fs.FileInfo, error) {
			if err := f.Truncate(*a.Size); err != nil {
				return nil, err
			}
			return f.Stat()
		})
		if errors.Is(err, errNotPinned) {
			return errno
		}
		if err != nil {
			return n.srv.errno("ftruncate", err)
		}
		n.srv.fill(&out.Attr, fi)
		return 0
	}

	chown := a.Uid != nil || a.Gid != nil
	if a.Mode == nil && !cur.IsDir() && (chown || in.Valid&fuse.FATTR_KILL_SUIDGID != 0) {
		if mode, kill := killPriv(cur, &in.Caller); kill {
			a.Mode = &mode
		}
	}
	if a == (overlay.Attrs{}) { // nothing asked
		n.srv.fill(&out.Attr, cur)
		return 0
	}
	if err := n.srv.fsys.Setattr(key, a); err != nil {
		return n.srv.errno("setattr", err)
	}
	fi, err := n.srv.fsys.Lstat(key)
	if err != nil {
		return n.srv.errno("setattr", err)
	}
	n.srv.fill(&out.Attr, fi)
	n.changedBehind()
	return 0
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
	ino := inoOf(fi)
	s.mu.Lock()
	if s.retryLookup(ctx, key) {
		s.gens[ino] = max(s.gens[ino], 1)
	}
	known := s.byIno[ino]
	s.mu.Unlock()
	if known != nil && !known.forgotten.Load() && known.StableAttr().Gen == s.gen(ino) {
		kkey, ok := known.key()
		switch {
		case !ok && known.holdsPin():
			// Its object was unlinked through the mount: the disk gave
			// the inode number to another file since (a commit writes
			// new files), which must not read or write the pinned one.
			s.replace(known)
		case ok && kkey != key:
			if kfi, err := s.fsys.Lstat(kkey); err != nil || inoOf(kfi) != ino {
				s.replace(known)
			}
		}
	}
	sa := s.stable(fi)
	_, name := splitKey(key)
	old := parent.GetChild(name)
	in := parent.NewInode(ctx, &node{srv: s}, sa)
	// Recorded once go-fuse set it up: others read its identity.
	n := in.Operations().(*node)
	n.lastKey.Store(&key)
	if old != nil && old != in && old.StableAttr().Mode == sa.Mode {
		old.Operations().(*node).next.Store(n)
	}
	s.mu.Lock()
	if k := s.byIno[ino]; k == nil || k.forgotten.Load() || k.StableAttr().Gen != sa.Gen {
		s.setKnown(ino, n)
	}
	s.mu.Unlock()
	return in
}

// claim records n, which just answered a request, as the node go-fuse
// keeps for its inode number: newChild may have recorded one go-fuse
// dropped in favour of n.
func (s *Server) claim(n *node) {
	sa := n.StableAttr()
	s.mu.Lock()
	if k := s.byIno[sa.Ino]; k != n && (k == nil || k.StableAttr().Gen <= sa.Gen || k.forgotten.Load()) {
		s.setKnown(sa.Ino, n)
	}
	s.mu.Unlock()
}

// setKnown records n as the node go-fuse keeps for inode number ino.
// The one recorded before, if the kernel still knows it, is one of a
// replaced generation: kept as a twin (see twinsOf), unless it holds a
// pin: its object has no name, and the number may be another's by now.
// s.mu is held.
func (s *Server) setKnown(ino uint64, n *node) {
	if k := s.byIno[ino]; k != nil && k != n && !k.forgotten.Load() && !s.holds(k) && !slices.Contains(s.twins[ino], k) {
		s.twins[ino] = append(s.twins[ino], k)
	}
	s.byIno[ino] = n
}

// holds reports whether n holds a pin (see Server.hold). s.mu is held.
func (s *Server) holds(n *node) bool {
	_, ok := s.pinnedNodes[n]
	return ok
}

// twinsOf returns the other nodes the kernel knows for n's object:
// nodes of replaced generations (see Server.replace) and the current
// one. The kernel caches attributes and pages per node, so a change
// through one must drop what the others cached.
func (s *Server) twinsOf(n *node) []*node {
	ino := n.StableAttr().Ino
	s.mu.Lock()
	defer s.mu.Unlock()
	twins := s.twins[ino]
	if len(twins) == 0 {
		return nil
	}
	var out []*node
	for _, m := range append(twins, s.byIno[ino]) {
		if m != nil && m != n && !m.forgotten.Load() && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// OnForget implements NodeOnForgetter: the kernel forgot n, and go-fuse
// drops it. Its pinned handle goes with it.
func (n *node) OnForget() {
	n.forgotten.Store(true)
	n.unpin(nil)
	ino := n.StableAttr().Ino
	n.srv.mu.Lock()
	if n.srv.byIno[ino] == n {
		delete(n.srv.byIno, ino)
	}
	if twins := slices.DeleteFunc(n.srv.twins[ino], func(m *node) bool { return m == n || m.forgotten.Load() }); len(twins) > 0 {
		n.srv.twins[ino] = twins
	} else {
		delete(n.srv.twins, ino)
	}
	n.srv.mu.Unlock()
}

// gen is the current generation of inode number ino.
func (s *Server) gen(ino uint64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gens[ino]
}

// stable is the identity of fi's object for go-fuse.
func (s *Server) stable(fi fs.FileInfo) gofs.StableAttr {
	ino := inoOf(fi)
	return gofs.StableAttr{Mode: typeOf(fi.Mode()), Ino: ino, Gen: s.gen(ino)}
}

// replace gives n's inode number a new generation, so the next lookup
// of its path makes a new node, unless that happened already.
func (s *Server) replace(n *node) {
	sa := n.StableAttr()
	s.mu.Lock()
	if s.gens[sa.Ino] == sa.Gen {
		s.gens[sa.Ino] = sa.Gen + 1
	}
	s.mu.Unlock()
}

// fill sets out from fi.
func (s *Server) fill(out *fuse.Attr, fi fs.FileInfo) {
	out.Ino = inoOf(fi)
	out.Size = uint64(fi.Size())
	out.Mode = beneath.UnixMode(fi.Mode())
	out.Blksize = 4096
	mtime := fi.ModTime()
	atime, ctime := mtime, mtime
	if a, ok := fi.Sys().(*overlay.Attr); ok {
		out.Nlink = a.Nlink
		out.Uid, out.Gid = a.Uid, a.Gid
		out.Rdev = uint32(a.Rdev)
		out.Blocks = uint64(a.Blocks)
		atime, ctime = a.Atime, a.Ctime
	}
	if out.Blocks == 0 {
		out.Blocks = (out.Size + 511) / 512
	}
	out.SetTimes(&atime, &mtime, &ctime)
}

// inoOf is the inode number the kernel gets for fi's object.
func inoOf(fi fs.FileInfo) uint64 {
	a, ok := fi.Sys().(*overlay.Attr)
	if !ok {
		return 0
	}
	if a.Ino == ^uint64(0) { // reserved by go-fuse
		return a.Ino - 1
	}
	return a.Ino
}

// typeOf is the S_IFMT bits of m.
func typeOf(m fs.FileMode) uint32 {
	switch {
	case m.IsDir():
		return syscall.S_IFDIR
	case m&fs.ModeSymlink != 0:
		return syscall.S_IFLNK
	case m&fs.ModeNamedPipe != 0:
		return syscall.S_IFIFO
	case m&fs.ModeSocket != 0:
		return syscall.S_IFSOCK
	case m&fs.ModeCharDevice != 0:
		return syscall.S_IFCHR
	case m&fs.ModeDevice != 0:
		return syscall.S_IFBLK
	}
	return syscall.S_IFREG
}

// fileMode is the permission bits of a mode from the kernel.
func fileMode(mode uint32) fs.FileMode { return beneath.FileMode(mode & 0o7777) }
