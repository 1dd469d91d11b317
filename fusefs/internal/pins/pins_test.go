//go:build linux

package pins

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/spf13/afero"
)

// file is a handle that counts its closes.
type file struct {
	afero.File
	closes int
}

func (f *file) Close() error { f.closes++; return nil }

// TestSlot: a slot keeps the first handle it is given, serves it to
// Use, and closes it only for its own handle or for nil; the callbacks
// run exactly when the handle is kept and closed.
func TestSlot(t *testing.T) {
	var none *Slot
	if err := none.Use(func(afero.File) error { return nil }); !errors.Is(err, ErrNotPinned) {
		t.Fatalf("Use of a nil slot: %v", err)
	}
	if none.Holds() || none.Gone() != nil {
		t.Fatal("a nil slot keeps something")
	}
	none.Close(nil, func() { t.Fatal("a nil slot closed something") })

	var s Slot
	if err := s.Use(func(afero.File) error { return nil }); !errors.Is(err, ErrNotPinned) {
		t.Fatalf("Use of an empty slot: %v", err)
	}
	f, g := &file{}, &file{}
	held := 0
	if !s.Keep(f, func() { held++ }) || held != 1 || !s.Holds() {
		t.Fatalf("Keep of an empty slot: held %d times, holds %v", held, s.Holds())
	}
	if s.Keep(g, func() { held++ }) || held != 1 {
		t.Fatal("a second handle was kept over the first")
	}
	var used afero.File
	want := errors.New("from fn")
	if err := s.Use(func(h afero.File) error { used = h; return want }); err != want || used != afero.File(f) {
		t.Fatalf("Use: %v on %v, want fn's error on the kept handle", err, used)
	}
	s.Close(g, func() { t.Fatal("closed for another handle") })
	if f.closes > 0 || !s.Holds() {
		t.Fatal("Close of another handle closed the kept one")
	}
	released := 0
	s.Close(nil, func() { released++ })
	if f.closes != 1 || s.Holds() || released != 1 {
		t.Fatalf("Close(nil): closed %v, holds %v, released %d times", f.closes > 0, s.Holds(), released)
	}
	s.Close(nil, func() { released++ })
	if released != 1 || f.closes != 1 {
		t.Fatal("closed twice")
	}
	if !s.Keep(g, func() {}) {
		t.Fatal("an emptied slot refused a handle")
	}
	s.Close(g, func() { released++ })
	if g.closes == 0 || released != 2 {
		t.Fatal("Close of the kept handle by name did not close it")
	}
}

// TestSlotGone: a removed directory's attributes stay until undone.
func TestSlotGone(t *testing.T) {
	var s Slot
	fi := info{}
	undo := s.SetGone(fi)
	if s.Gone() != fi {
		t.Fatal("SetGone not kept")
	}
	if s.Holds() {
		t.Fatal("a directory's attributes count as a pinned handle")
	}
	undo()
	if s.Gone() != nil {
		t.Fatal("undo kept the attributes")
	}
}

type info struct{ fs.FileInfo }
