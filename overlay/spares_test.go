//go:build linux

package overlay_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"

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

// diskIno is the inode number on disk of the file at p.
func diskIno(t *testing.T, p string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	must(t, syscall.Lstat(p, &st))
	return st.Ino
}

// dataNames lists the names in the draft's data directory.
func (e *spareEnv) dataNames(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(e.dir, "data"))
	must(t, err)
	var names []string
	for _, de := range ents {
		names = append(names, de.Name())
	}
	return names
}

// TestSpareDataFiles: a removed file's data file is kept where it is
// (emptied when it is large, a small one when taken), and the next new
// file takes it under the same name (no rename either way), with a new
// file's content and times.
func TestSpareDataFiles(t *testing.T) {
	e := openSpareEnv(t, t.TempDir(), t.TempDir())
	defer e.ws.Close()
	mustWrite(t, e.v, "big.txt", strings.Repeat("the content of big\n", 10000))
	big := overlay.DataFile(e.v, "big.txt")
	must(t, e.v.Remove("big.txt"))
	if fi, err := os.Lstat(big); err != nil || fi.Size() != 0 {
		t.Fatalf("a large removed file's data file did not stay, emptied: %v, %v", fi, err)
	}
	mustWrite(t, e.v, "a.txt", "the content of a")
	p := overlay.DataFile(e.v, "a.txt")
	if p != big {
		t.Fatalf("the new file's data file is %s, not the spare %s", p, big)
	}
	old := diskIno(t, p)
	must(t, e.v.Remove("a.txt"))
	if fi, err := os.Lstat(p); err != nil || diskIno(t, p) != old {
		t.Fatalf("the removed file's data file did not stay: %v, %v", fi, err)
	}
	time.Sleep(100 * time.Millisecond)               // the spare's times are well older than the new file's
	before := time.Now().Add(-30 * time.Millisecond) // the kernel's clock is coarse
	f, err := e.v.OpenFile("b.txt", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	must(t, err)
	must(t, f.Close())
	if got := overlay.DataFile(e.v, "b.txt"); got != p || diskIno(t, got) != old {
		t.Fatalf("the new file's data file is %s (inode %d), not the spare %s (inode %d)", got, diskIno(t, got), p, old)
	}
	if names := e.dataNames(t); len(names) != 1 {
		t.Fatalf("data files %v after a new file took the spare, want one", names)
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

	// A MKNOD (how the kernel makes tar's files in the mount) takes a
	// spare without opening it: emptied and new all the same.
	mustWrite(t, e.v, "c.txt", "the content of c")
	p = overlay.DataFile(e.v, "c.txt")
	old = diskIno(t, p)
	must(t, e.v.Remove("c.txt"))
	time.Sleep(100 * time.Millisecond)
	before = time.Now().Add(-30 * time.Millisecond)
	must(t, e.v.Mknod("d.txt", 0o644, 0))
	if got := overlay.DataFile(e.v, "d.txt"); got != p || diskIno(t, got) != old {
		t.Fatalf("the new file's data file is %s (inode %d), not the spare %s (inode %d)", got, diskIno(t, got), p, old)
	}
	fi, err = e.v.Lstat("d.txt")
	must(t, err)
	if fi.ModTime().Before(before) || fi.Size() != 0 {
		t.Errorf("the file MKNOD made: mtime %v (made after %v), size %d", fi.ModTime(), before, fi.Size())
	}
	vfstest.WantContent(t, e.v, "d.txt", "")
}

// TestSpareDataFilesLinked: a data file linked elsewhere (a commit's undo
// copy, a rewind) is removed, not emptied: the other name keeps its
// content.
func TestSpareDataFilesLinked(t *testing.T) {
	e := openSpareEnv(t, t.TempDir(), t.TempDir())
	defer e.ws.Close()
	mustWrite(t, e.v, "a.txt", "kept elsewhere")
	kept := filepath.Join(t.TempDir(), "kept")
	must(t, os.Link(overlay.DataFile(e.v, "a.txt"), kept))
	must(t, e.v.Remove("a.txt"))
	if names := e.dataNames(t); len(names) != 0 {
		t.Fatalf("a linked data file became a spare: %v", names)
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != "kept elsewhere" {
		t.Fatalf("the other link reads %q, %v", b, err)
	}
}

// TestSpareDataFilesAfterCrash: numbered data files no record names,
// one not emptied yet (a crash between a remove's record and its
// emptying), are spares after a restart; a new file never shows what a
// spare held, and new numbers go past the ones found.
func TestSpareDataFilesAfterCrash(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	e := openSpareEnv(t, root, state)
	mustWrite(t, e.v, "a.txt", "a")
	must(t, e.v.Remove("a.txt"))
	must(t, e.ws.Close())
	data := filepath.Join(e.dir, "data")
	must(t, os.WriteFile(filepath.Join(data, "nff"), []byte("left by a crash"), 0o600))
	must(t, os.WriteFile(filepath.Join(data, "n-not-a-number"), nil, 0o600))

	e = openSpareEnv(t, root, state)
	defer e.ws.Close()
	if _, err := os.Lstat(filepath.Join(data, "n-not-a-number")); !os.IsNotExist(err) {
		t.Fatalf("a file not named as data files are stayed: %v", err)
	}
	for _, name := range []string{"b.txt", "c.txt"} {
		f, err := e.v.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		must(t, err)
		must(t, f.Close())
		vfstest.WantContent(t, e.v, name, "")
	}
	if names := e.dataNames(t); len(names) != 2 {
		t.Fatalf("data files %v, want the two spares taken", names)
	}
	mustWrite(t, e.v, "d.txt", "new")
	if got := filepath.Base(overlay.DataFile(e.v, "d.txt")); got != "n100" {
		t.Fatalf("a new data file is %s, want n100", got)
	}
}

// TestSpareDataFilesAfterClose: a file whose last handle closes after
// the workspace closed (its data directory is closed then) still has its
// data file removed, by its path.
func TestSpareDataFilesAfterClose(t *testing.T) {
	e := openSpareEnv(t, t.TempDir(), t.TempDir())
	mustWrite(t, e.v, "a.txt", "open while removed")
	data := overlay.DataFile(e.v, "a.txt")
	f, err := e.v.Open("a.txt")
	must(t, err)
	must(t, e.v.Remove("a.txt"))
	must(t, e.ws.Close())
	f.Close()
	if _, err := os.Lstat(data); !os.IsNotExist(err) {
		t.Fatalf("the data file of a file closed after the workspace stayed: %v", err)
	}
}

// TestSparesMadeAhead: once the draft is quiet, as many empty data files
// as a burst of creates had to make are made ahead, and the next burst
// takes them instead of making its own.
func TestSparesMadeAhead(t *testing.T) {
	state := t.TempDir()
	ws, err := overlay.Open(overlay.Options{Root: t.TempDir(), StateDir: state, Quiet: 50 * time.Millisecond})
	must(t, err)
	defer ws.Close()
	d, err := ws.Draft("")
	must(t, err)
	v := d.Fs(overlay.SourceMount)
	e := &spareEnv{state: state, dir: filepath.Join(state, "drafts", "main"), ws: ws, v: v}
	const burst = 300
	for i := range burst {
		mustWrite(t, v, fmt.Sprintf("a%03d", i), "x")
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(e.dataNames(t)) < 2*burst {
		if time.Now().After(deadline) {
			t.Fatalf("%d data files 20 s after the burst, want %d: none made ahead", len(e.dataNames(t)), 2*burst)
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := e.dataNames(t)
	for _, n := range before {
		if fi, err := os.Stat(filepath.Join(e.dir, "data", n)); err != nil || fi.Size() > 1 {
			t.Fatalf("data file %s: %v %v", n, fi, err)
		}
	}
	for i := range burst {
		mustWrite(t, v, fmt.Sprintf("b%03d", i), "y")
	}
	if after := e.dataNames(t); len(after) != len(before) {
		t.Errorf("the second burst made %d data files of its own; want it to take the %d made ahead", len(after)-len(before), burst)
	}
	for i := range burst {
		if b, err := afero.ReadFile(v, fmt.Sprintf("b%03d", i)); err != nil || string(b) != "y" {
			t.Fatalf("b%03d: %q %v", i, b, err)
		}
	}
}
