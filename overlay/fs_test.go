//go:build linux

package overlay_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/buffers"
	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/vfstest"
)

// TestBehaviour runs the behaviour suite on the engine's view (the
// mount runs it too: fusefs TestBehaviourThroughMount).
func TestBehaviour(t *testing.T) {
	vfstest.Run(t, func(t *testing.T, tree map[string]string) vfstest.Env {
		return engineEnv{newViewEnv(t, tree)}
	})
}

// engineEnv is a viewEnv as the suite sees it.
type engineEnv struct{ e *viewEnv }

func (x engineEnv) FS() vfstest.FS                   { return x.e.v }
func (x engineEnv) Root() string                     { return x.e.root }
func (x engineEnv) Disk(key string) string           { return x.e.disk(key) }
func (x engineEnv) Reopen()                          { x.e.reopen() }
func (x engineEnv) Settle() bool                     { return x.e.ws.Settle(time.Minute) }
func (x engineEnv) Buffers() *buffers.Set            { return x.e.bufs }
func (x engineEnv) Resolve(p string) (string, error) { return x.e.d.Resolve(p) }

// TestMemMapDisk runs the view over afero's MemMapFs, a disk layer with
// no inode numbers and no symlinks: numbers are made up per path and
// stay across copy-up and rename.
func TestMemMapDisk(t *testing.T) {
	disk := afero.NewMemMapFs()
	must(t, afero.WriteFile(disk, "/d/a.txt", []byte("a"), 0o644))
	must(t, afero.WriteFile(disk, "/d/b.txt", []byte("b"), 0o644))
	ws, err := overlay.OpenOn(overlay.Options{Root: t.TempDir(), StateDir: t.TempDir()}, disk)
	must(t, err)
	defer ws.Close()
	d, err := ws.Draft("")
	must(t, err)
	v := d.Fs(overlay.SourceMCP)
	ino := vfstest.InoOf(t, v, "d/a.txt")
	if ino == 0 || ino == vfstest.InoOf(t, v, "d/b.txt") {
		t.Fatalf("made-up inode numbers %d and %d", ino, vfstest.InoOf(t, v, "d/b.txt"))
	}
	mustWrite(t, v, "d/a.txt", "a, edited")
	must(t, v.Rename("d/a.txt", "d/c.txt"))
	if got := vfstest.InoOf(t, v, "d/c.txt"); got != ino {
		t.Fatalf("inode %d after copy-up and rename, want %d", got, ino)
	}
	vfstest.WantContent(t, v, "d/c.txt", "a, edited")
	vfstest.WantNames(t, v, "d", "b.txt", "c.txt")
	must(t, v.RemoveAll("d"))
	vfstest.WantNames(t, v, "")
	if b, err := afero.ReadFile(disk, "/d/a.txt"); err != nil || string(b) != "a" {
		t.Fatalf("the disk layer changed: %q, %v", b, err)
	}
	if _, err := v.Lstat("d"); overlay.Errno(err) != syscall.ENOENT {
		t.Fatalf("lstat of a removed directory: %v", err)
	}
}
