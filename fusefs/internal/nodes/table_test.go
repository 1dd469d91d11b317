//go:build linux

package nodes

import (
	"slices"
	"testing"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/draftfs/draftfs/fusefs/internal/pins"
)

// fake is a node outside go-fuse's tree: the table never asks it for
// a path in these tests.
type fake struct {
	gofs.Inode
	sa        gofs.StableAttr
	forgotten bool
	next      *fake
}

func (f *fake) StableAttr() gofs.StableAttr { return f.sa }
func (f *fake) Dropped() bool               { return f.forgotten }
func (f *fake) Follow(n *fake)              { f.next = n }
func (f *fake) Next() *fake                 { return f.next }
func (f *fake) LastKey() (string, bool)     { return "", false }
func (f *fake) SetKey(string)               {}
func (f *fake) Slot() *pins.Slot            { return nil }

// TestTwins: a node of a new generation keeps the one it replaced as a
// twin until that one is forgotten; a node holding a pin is no twin.
func TestTwins(t *testing.T) {
	var tab Table[*fake]
	old := &fake{sa: gofs.StableAttr{Ino: 7}}
	tab.Added(old, old.sa, nil, false)
	tab.Replace(old.sa)
	if g := tab.Gen(7); g != 1 {
		t.Fatalf("generation after Replace: %d", g)
	}
	fresh := &fake{sa: gofs.StableAttr{Ino: 7, Gen: 1}}
	tab.Added(fresh, fresh.sa, nil, false)
	if got := tab.TwinsOf(fresh); !slices.Equal(got, []*fake{old}) {
		t.Fatalf("twins of the fresh node: %v", got)
	}
	if got := tab.TwinsOf(old); !slices.Equal(got, []*fake{fresh}) {
		t.Fatalf("twins of the old node: %v", got)
	}
	old.forgotten = true
	tab.Forget(old, nil)
	if got := tab.TwinsOf(fresh); len(got) != 0 {
		t.Fatalf("twins after the old node was forgotten: %v", got)
	}

	pinned := &fake{sa: gofs.StableAttr{Ino: 9}}
	tab.Added(pinned, pinned.sa, nil, false)
	tab.Hold(pinned, true)
	tab.Replace(pinned.sa)
	other := &fake{sa: gofs.StableAttr{Ino: 9, Gen: 1}}
	tab.Added(other, other.sa, nil, false)
	if got := tab.TwinsOf(other); len(got) != 0 {
		t.Fatalf("a pinned node became a twin: %v", got)
	}
	if got := tab.Holding(); !slices.Equal(got, []*fake{pinned}) {
		t.Fatalf("holding: %v", got)
	}
}

// TestForgetRelinksFollowers: when a node that others follow is
// forgotten, they follow the node it followed, and the table keeps
// nothing of it.
func TestForgetRelinksFollowers(t *testing.T) {
	var tab Table[*fake]
	a := &fake{sa: gofs.StableAttr{Ino: 1}}
	b := &fake{sa: gofs.StableAttr{Ino: 2}}
	c := &fake{sa: gofs.StableAttr{Ino: 3}}
	tab.Added(b, b.sa, a, true) // b took a's name
	tab.Added(c, c.sa, b, true) // c took it from b
	if a.next != b || b.next != c {
		t.Fatal("Added did not make the old node follow the new one")
	}
	b.forgotten = true
	tab.Forget(b, b.next)
	if got := tab.followers[c]; !slices.Equal(got, []*fake{a}) {
		t.Fatalf("c's followers after b was forgotten: %v", got)
	}
	if _, ok := tab.followers[b]; ok {
		t.Fatal("the forgotten node still has followers recorded")
	}
	if _, ok := tab.Known(2, false); ok {
		t.Fatal("the forgotten node is still known for its inode number")
	}
}
