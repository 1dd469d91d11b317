//go:build linux

package fusefs

import (
	"context"
	"io/fs"
	"slices"
	"strings"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/draftfs/draftfs/overlay"
)

// Identity: which node stands for which object, by path and inode
// number, across lookups, renames, commits and replaced generations
// (see the package documentation, Identity).

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

// maxHops bounds how far key follows nodes that took a name in turn.
const maxHops = 8

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
	if s.retrying.Is(callerPid(ctx), key) {
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
	s.mu.Lock()
	if old != nil && old != in && old.StableAttr().Mode == sa.Mode {
		o := old.Operations().(*node)
		o.next.Store(n)
		n.followers = append(n.followers, o)
	}
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
	// Its followers now follow the node it followed, for pinChild; so a
	// name replaced again and again keeps no chain of dropped nodes.
	if m := n.next.Load(); m != nil {
		m.followers = append(slices.DeleteFunc(m.followers, func(f *node) bool { return f == n }), n.followers...)
	}
	n.followers = nil
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
