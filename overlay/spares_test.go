//go:build linux

package overlay_test

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/vfstest"
)

// spareEnv is a workspace whose draft "main" keeps its state in state.
type spareEnv struct {
	state, dir string
	ws         *overlay.Workspace
	v          *overlay.Fs
}

func openSpareEnv(t *testing.T, root, state string) *spareEnv {
	t.Helper()
	ws, err := overlay.Open(overlay.Options{Root: root, StateDir: state})
	must(t, err)
	d, err := ws.Draft("")
	must(t, err)
	return &spareEnv{state: state, dir: filepath.Join(state, "drafts", "main"), ws: ws, v: d.Fs(overlay.SourceMCP)}
}

// dataIno is the inode number on disk of the data file behind key.
func (e *spareEnv) dataIno(t *testing.T, key string) uint64 {
	t.Helper()
	ino := vfstest.InoOf(t, e.v, key)
	var st syscall.Stat_t
	must(t, syscall.Lstat(filepath.Join(e.dir, "data", strconv.FormatUint(ino, 16)), &st))
	return st.Ino
}

func (e *spareEnv) spares(t *testing.T) []os.DirEntry {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(e.dir, "spare"))
	must(t, err)
	return ents
}

// TestSpareDataFiles: a removed file's data file is emptied and kept,
// and the next new file takes it, with a new file's content and times.
func TestSpareDataFiles(t *testing.T) {
	e := openSpareEnv(t, t.TempDir(), t.TempDir())
	defer e.ws.Close()
	mustWrite(t, e.v, "a.txt", "the content of a")
	old := e.dataIno(t, "a.txt")
	must(t, e.v.Remove("a.txt"))
	sp := e.spares(t)
	if len(sp) != 1 {
		t.Fatalf("%d spare data files after removing a file, want 1", len(sp))
	}
	if fi, err := sp[0].Info(); err != nil || fi.Size() != 0 {
		t.Fatalf("the spare is not empty: %v, %v", fi, err)
	}
	time.Sleep(100 * time.Millisecond)               // the spare's times are well older than the new file's
	before := time.Now().Add(-30 * time.Millisecond) // the kernel's clock is coarse
	f, err := e.v.OpenFile("b.txt", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	must(t, err)
	must(t, f.Close())
	if got := e.dataIno(t, "b.txt"); got != old {
		t.Fatalf("the new file's data file is inode %d, not the spare %d", got, old)
	}
	if n := len(e.spares(t)); n != 0 {
		t.Fatalf("%d spares left after a new file took one", n)
	}
	fi, err := e.v.Lstat("b.txt") // before reading it, which moves its atime
	must(t, err)
	a := fi.Sys().(*overlay.Attr)
	for name, tm := range map[string]time.Time{"mtime": fi.ModTime(), "atime": a.Atime, "ctime": a.Ctime} {
		if tm.Before(before) {
			t.Errorf("the new file's %s %v is older than its creation (%v)", name, tm, before)
		}
	}
	vfstest.WantContent(t, e.v, "b.txt", "")
}

// TestSpareDataFilesLinked: a data file linked elsewhere (a commit's undo
// copy, a rewind) is removed, not emptied: the other name keeps its
// content.
func TestSpareDataFilesLinked(t *testing.T) {
	e := openSpareEnv(t, t.TempDir(), t.TempDir())
	defer e.ws.Close()
	mustWrite(t, e.v, "a.txt", "kept elsewhere")
	kept := filepath.Join(t.TempDir(), "kept")
	must(t, os.Link(filepath.Join(e.dir, "data", strconv.FormatUint(vfstest.InoOf(t, e.v, "a.txt"), 16)), kept))
	must(t, e.v.Remove("a.txt"))
	if n := len(e.spares(t)); n != 0 {
		t.Fatalf("a linked data file became a spare (%d spares)", n)
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != "kept elsewhere" {
		t.Fatalf("the other link reads %q, %v", b, err)
	}
}

// TestSpareDataFilesAfterCrash: spares a previous run left, one of them
// not emptied yet (a crash between the two steps), are taken after a
// restart, and a new file never shows what a spare held.
func TestSpareDataFilesAfterCrash(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	e := openSpareEnv(t, root, state)
	mustWrite(t, e.v, "a.txt", "a")
	must(t, e.v.Remove("a.txt"))
	must(t, e.ws.Close())
	sp := filepath.Join(e.dir, "spare")
	must(t, os.WriteFile(filepath.Join(sp, "ff"), []byte("left by a crash"), 0o600))
	must(t, os.WriteFile(filepath.Join(sp, "not-a-spare"), nil, 0o600))

	e = openSpareEnv(t, root, state)
	defer e.ws.Close()
	if _, err := os.Lstat(filepath.Join(sp, "not-a-spare")); !os.IsNotExist(err) {
		t.Fatalf("a file not named as spares are stayed: %v", err)
	}
	for _, name := range []string{"b.txt", "c.txt"} {
		f, err := e.v.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		must(t, err)
		must(t, f.Close())
		vfstest.WantContent(t, e.v, name, "")
	}
	if n := len(e.spares(t)); n != 0 {
		t.Fatalf("%d spares left, want both taken", n)
	}
	// The next spare's name is past the ones found.
	must(t, e.v.Remove("b.txt"))
	if sp := e.spares(t); len(sp) != 1 || sp[0].Name() != "100" {
		t.Fatalf("spares %v, want one named 100", sp)
	}
}

// TestSpareDataFilesAfterClose: a file whose last handle closes after
// the workspace closed (its data directory is closed then) still has its
// data file removed, by its path.
func TestSpareDataFilesAfterClose(t *testing.T) {
	e := openSpareEnv(t, t.TempDir(), t.TempDir())
	mustWrite(t, e.v, "a.txt", "open while removed")
	data := filepath.Join(e.dir, "data", strconv.FormatUint(vfstest.InoOf(t, e.v, "a.txt"), 16))
	f, err := e.v.Open("a.txt")
	must(t, err)
	must(t, e.v.Remove("a.txt"))
	must(t, e.ws.Close())
	f.Close()
	if _, err := os.Lstat(data); !os.IsNotExist(err) {
		t.Fatalf("the data file of a file closed after the workspace stayed: %v", err)
	}
}
