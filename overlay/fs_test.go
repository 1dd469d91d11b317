//go:build linux

package overlay_test

import (
	"errors"
	"io/fs"
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

// TestLstatMeta: LstatMeta gives Lstat's type, mode, owner and inode
// for draft and disk objects alike (what the mount decides a SETATTR
// on), without a draft file's size.
func TestLstatMeta(t *testing.T) {
	e := newViewEnv(t, map[string]string{"disk.txt": "on disk", "dir/x": "x"})
	mustWrite(t, e.v, "draft.txt", "in the draft")
	if err := e.v.Chmod("draft.txt", 0o640|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if err := e.v.Symlink("draft.txt", "link"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"disk.txt", "draft.txt", "dir", "link", ""} {
		want, err := e.v.Lstat(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.v.LstatMeta(name)
		if err != nil {
			t.Fatalf("LstatMeta(%q): %v", name, err)
		}
		wa, ga := want.Sys().(*overlay.Attr), got.Sys().(*overlay.Attr)
		if got.Mode() != want.Mode() || ga.Ino != wa.Ino || ga.Uid != wa.Uid || ga.Gid != wa.Gid {
			t.Errorf("LstatMeta(%q) = %v ino %d owner %d:%d, Lstat %v ino %d owner %d:%d", name, got.Mode(), ga.Ino, ga.Uid, ga.Gid, want.Mode(), wa.Ino, wa.Uid, wa.Gid)
		}
	}
	if _, err := e.v.LstatMeta("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LstatMeta of a missing name: %v", err)
	}
}
