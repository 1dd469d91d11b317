//go:build linux

// Package nodes keeps the table a FUSE server needs to tell which of
// the nodes the kernel knows stand for which object: the generation of
// each inode number, the node go-fuse most likely keeps for it, the
// twins (nodes of replaced generations the kernel still knows), which
// nodes follow which (a lookup gave one's name to another), and which
// hold a pinned handle; which node go-fuse's tree holds at a path; and
// the identity go-fuse gives an engine object ([Table.Stable]), and
// which directories a commit or an undo only renumbered ([Renumbered]).
// It is FUSE-specific (the kernel caches per node, and a node's
// identity is its inode number and generation), but it translates no
// request: package fusefs consults it from its node methods, and its
// documentation (Identity) says what the table is for.
//
// # Locking
//
// Table.mu protects every field. Node methods the table calls
// (Dropped, Follow) take no lock of the caller's; a node's slot
// (pins.Slot), whose lock is outside the table's, is read only where
// Table.mu is not held (Named, Child).
package nodes

import (
	"slices"
	"sync"
	"sync/atomic"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/draftfs/draftfs/fusefs/internal/pins"
)

// Node is what the table needs of a node.
type Node[N any] interface {
	comparable
	gofs.InodeEmbedder
	StableAttr() gofs.StableAttr
	// Forgotten, LastKey and SetKey: see [Record], which the node
	// embeds.
	Dropped() bool
	LastKey() (string, bool)
	SetKey(key string)
	// Follow records that a lookup gave the node's name to n; Next
	// returns that node (none: the zero N).
	Follow(n N)
	Next() N
	// Slot is what the node keeps once its object's last name went
	// through the mount (nil: nothing).
	Slot() *pins.Slot
}

// Record is what a node keeps of its own for the table: the node type
// embeds it.
type Record struct {
	// lastKey is the path a lookup or a rename last gave the node:
	// where to look for its object once the kernel forgot it (see
	// Table.Successor).
	lastKey atomic.Pointer[string]
	// dropped: go-fuse dropped the node (OnForget); it never comes
	// back, a later lookup makes a new node. go-fuse's deprecated
	// Inode.Forgotten is not used.
	dropped atomic.Bool
}

// Dropped reports whether go-fuse dropped the node (see MarkDropped).
func (r *Record) Dropped() bool { return r.dropped.Load() }

// MarkDropped records that go-fuse dropped the node: its OnForget
// calls it.
func (r *Record) MarkDropped() { r.dropped.Store(true) }

// LastKey is the path a lookup or a rename last gave the node.
func (r *Record) LastKey() (string, bool) {
	if k := r.lastKey.Load(); k != nil {
		return *k, true
	}
	return "", false
}

// SetKey records the path key a lookup or a rename gave the node.
func (r *Record) SetKey(key string) { r.lastKey.Store(&key) }

// MaxHops bounds how far a node follows nodes that took a name in turn.
const MaxHops = 8

// Table is a mount's table of nodes; the zero Table is empty.
type Table[N Node[N]] struct {
	mu    sync.Mutex        // protects the following
	gens  map[uint64]uint64 // generation of inode numbers whose node was replaced
	byIno map[uint64]N      // the node go-fuse most likely keeps for each inode number
	// twins: nodes of replaced generations the kernel still knows, by
	// inode number (see setKnown)
	twins map[uint64][]N
	// followers: the nodes that follow each node (see Node.Follow)
	followers map[N][]N
	// nodes with a pinned handle: the kernel forgets nothing when the
	// mount goes, so those are closed when serving ends.
	pinned map[N]struct{}
}

// init makes t's maps; t.mu is held.
func (t *Table[N]) init() {
	if t.gens == nil {
		t.gens, t.byIno, t.twins = map[uint64]uint64{}, map[uint64]N{}, map[uint64][]N{}
		t.followers, t.pinned = map[N][]N{}, map[N]struct{}{}
	}
}

// Gen is the current generation of inode number ino.
func (t *Table[N]) Gen(ino uint64) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gens[ino]
}

// Replace gives sa's inode number a new generation, so the next lookup
// of its path makes a new node, unless that happened already.
func (t *Table[N]) Replace(sa gofs.StableAttr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	if t.gens[sa.Ino] == sa.Gen {
		t.gens[sa.Ino] = sa.Gen + 1
	}
}

// Known returns the node recorded for inode number ino; with fresh, it
// first moves ino past generation 0, so the lookup under way makes a
// fresh node.
func (t *Table[N]) Known(ino uint64, fresh bool) (N, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	if fresh {
		t.gens[ino] = max(t.gens[ino], 1)
	}
	n, ok := t.byIno[ino]
	return n, ok
}

// Live is the node go-fuse keeps for identity sa, if it still keeps
// one.
func (t *Table[N]) Live(sa gofs.StableAttr) (N, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if k, ok := t.byIno[sa.Ino]; ok && k.StableAttr() == sa && !k.Dropped() {
		return k, true
	}
	var none N
	return none, false
}

// Successor returns the node that has n's name now, through the nodes
// that took it in turn (see Node.Follow), with its path; false when
// there is none.
func (t *Table[N]) Successor(n N) (N, string, bool) {
	var none, last N
	for hops, m := 0, n.Next(); m != none && hops < MaxHops; hops, m = hops+1, m.Next() {
		if m.Dropped() {
			// go-fuse may have made a new node of the same identity
			// since, which no lookup linked from m.
			if k, ok := t.Live(m.StableAttr()); ok {
				m = k
			}
		}
		if key, ok := Path(m.EmbeddedInode()); ok {
			return m, key, true
		}
		last = m
	}
	// The names went to nodes of another generation of n's object (an
	// open that would have clashed in passthrough mode moved n away,
	// and a hard link kept a name elsewhere): one the kernel still
	// knows with a name leads there.
	for _, m := range t.TwinsOf(n) {
		if key, ok := Path(m.EmbeddedInode()); ok {
			return m, key, true
		}
	}
	// The kernel forgot the node that took n's name, and no lookup took
	// it on from there: follow the path where that node was last.
	if last != none {
		if key, ok := last.LastKey(); ok {
			return last, key, true
		}
	}
	return none, "", false
}

// Added records n, which a lookup of identity sa just gave go-fuse.
// When it took the name of old (a node of its type), old follows it.
func (t *Table[N]) Added(n N, sa gofs.StableAttr, old N, took bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	if took {
		old.Follow(n)
		t.followers[n] = append(t.followers[n], old)
	}
	if k, ok := t.byIno[sa.Ino]; !ok || k.Dropped() || k.StableAttr().Gen != sa.Gen {
		t.setKnown(sa.Ino, n)
	}
}

// Claim records n, which just answered a request, as the node go-fuse
// keeps for its inode number: Added may have recorded one go-fuse
// dropped in favour of n.
func (t *Table[N]) Claim(n N) {
	sa := n.StableAttr()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	if k, ok := t.byIno[sa.Ino]; k != n && (!ok || k.StableAttr().Gen <= sa.Gen || k.Dropped()) {
		t.setKnown(sa.Ino, n)
	}
}

// setKnown records n as the node go-fuse keeps for inode number ino.
// The one recorded before, if the kernel still knows it, is one of a
// replaced generation: kept as a twin (see TwinsOf), unless it holds a
// pin: its object has no name, and the number may be another's by now.
// t.mu is held.
func (t *Table[N]) setKnown(ino uint64, n N) {
	if k, ok := t.byIno[ino]; ok && k != n && !k.Dropped() && !t.holds(k) && !slices.Contains(t.twins[ino], k) {
		t.twins[ino] = append(t.twins[ino], k)
	}
	t.byIno[ino] = n
}

// holds reports whether n holds a pin (see Hold). t.mu is held.
func (t *Table[N]) holds(n N) bool {
	_, ok := t.pinned[n]
	return ok
}

// TwinsOf returns the other nodes the kernel knows for n's object:
// nodes of replaced generations and the current one. The kernel caches
// attributes and pages per node, so a change through one must drop
// what the others cached.
func (t *Table[N]) TwinsOf(n N) []N {
	ino := n.StableAttr().Ino
	t.mu.Lock()
	defer t.mu.Unlock()
	twins := t.twins[ino]
	if len(twins) == 0 {
		return nil
	}
	var out []N
	if k, ok := t.byIno[ino]; ok {
		twins = append(twins, k)
	}
	for _, m := range twins {
		if m != n && !m.Dropped() && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// Forget drops n, which go-fuse dropped; next is the node n followed
// (none: the zero N). n's followers now follow next, so a name replaced
// again and again keeps no chain of dropped nodes.
func (t *Table[N]) Forget(n, next N) {
	ino := n.StableAttr().Ino
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	if k, ok := t.byIno[ino]; ok && k == n {
		delete(t.byIno, ino)
	}
	var none N
	if next != none {
		f := append(slices.DeleteFunc(t.followers[next], func(f N) bool { return f == n }), t.followers[n]...)
		if len(f) > 0 {
			t.followers[next] = f
		} else {
			delete(t.followers, next)
		}
	}
	delete(t.followers, n)
	if twins := slices.DeleteFunc(t.twins[ino], func(m N) bool { return m == n || m.Dropped() }); len(twins) > 0 {
		t.twins[ino] = twins
	} else {
		delete(t.twins, ino)
	}
}

// FollowersOf returns the nodes that follow n, directly or through
// others, and have no name of their own: a descriptor open on one reads
// n's object by n's path, so it must keep that object once the name
// goes, even after the kernel forgets n, or the nodes between (fstat
// then failed with ENOENT).
func (t *Table[N]) FollowersOf(n N) []N {
	var all []N
	t.mu.Lock()
	todo := t.followers[n]
	for hops := 0; len(todo) > 0 && hops < MaxHops; hops++ {
		all = append(all, todo...)
		var next []N
		for _, f := range todo {
			next = append(next, t.followers[f]...)
		}
		todo = next
	}
	t.mu.Unlock()
	return slices.DeleteFunc(all, func(f N) bool {
		_, named := Path(f.EmbeddedInode())
		return named || f.Dropped()
	})
}

// Hold records whether n holds a pinned handle, so that it is closed
// when serving ends (the kernel forgets nothing then).
func (t *Table[N]) Hold(n N, holds bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	if holds {
		t.pinned[n] = struct{}{}
	} else {
		delete(t.pinned, n)
	}
}

// Holding returns the nodes that hold a pinned handle.
func (t *Table[N]) Holding() []N {
	t.mu.Lock()
	defer t.mu.Unlock()
	nodes := make([]N, 0, len(t.pinned))
	for n := range t.pinned {
		nodes = append(nodes, n)
	}
	return nodes
}
