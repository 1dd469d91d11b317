//go:build linux

package nodes

import (
	"io/fs"
	"os"
	"testing"

	"github.com/draftfs/draftfs/overlay"
)

// info is an engine info with inode number ino, or with no engine
// attributes at all when sys is nil.
type info struct {
	fs.FileInfo
	sys any
}

func (i info) Sys() any { return i.sys }

// TestIno: the kernel gets the engine's inode number, but for the one
// go-fuse reserves, and 0 for an info that is not the engine's.
func TestIno(t *testing.T) {
	for _, c := range []struct {
		sys  any
		want uint64
	}{
		{&overlay.Attr{Ino: 42}, 42},
		{&overlay.Attr{Ino: 1<<63 + 5}, 1<<63 + 5},
		{&overlay.Attr{Ino: ^uint64(0)}, ^uint64(0) - 1},
		{nil, 0},
	} {
		if got := Ino(info{sys: c.sys}); got != c.want {
			t.Errorf("Ino of %+v: %d, want %d", c.sys, got, c.want)
		}
	}
}

// TestRenumbered: a directory renumbered between the draft's range and
// the disk's, either way, is the same directory; one whose number
// changed within a range is another.
func TestRenumbered(t *testing.T) {
	disk, disk2, draft, draft2 := uint64(12), uint64(13), uint64(1<<63+1), uint64(1<<63+2)
	for _, c := range []struct {
		was, ino uint64
		want     bool
	}{
		{draft, disk, true},  // committed
		{disk, draft, true},  // undone
		{disk, disk2, false}, // replaced on disk
		{draft, draft2, false},
		{disk, disk, false},
	} {
		if got := Renumbered(c.was, c.ino); got != c.want {
			t.Errorf("Renumbered(%d, %d) = %v, want %v", c.was, c.ino, got, c.want)
		}
	}
}

// TestType: the S_IFMT bits of a mode.
func TestType(t *testing.T) {
	for m, want := range map[fs.FileMode]uint32{
		0o644:                  0o100000,
		fs.ModeDir | 0o755:     0o040000,
		fs.ModeSymlink | 0o777: 0o120000,
		os.ModeNamedPipe:       0o010000,
	} {
		if got := Type(m); got != want {
			t.Errorf("Type(%v) = %o, want %o", m, got, want)
		}
	}
}
