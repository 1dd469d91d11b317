//go:build linux

package overlay_test

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/vfstest"
)

// TestSpecialFiles: FIFOs, sockets and device nodes are draft objects
// that list, stat, rename, link, chmod and whiteout, and survive a
// restart; the view never opens them (the kernel serves their I/O).
func TestSpecialFiles(t *testing.T) {
	e := newViewEnv(t, map[string]string{"dir/": ""})
	disk := diskSnapshot(t, e.root)
	kinds := map[string]fs.FileMode{
		"dir/fifo": fs.ModeNamedPipe,
		"dir/sock": fs.ModeSocket,
		"dir/chr":  fs.ModeDevice | fs.ModeCharDevice,
		"dir/blk":  fs.ModeDevice,
	}
	for name, typ := range kinds {
		must(t, e.v.Mknod(name, typ|0o640, unix.Mkdev(1, 3)))
	}
	wantErrno(t, "mknod over an existing name", e.v.Mknod("dir/fifo", fs.ModeNamedPipe|0o644, 0), syscall.EEXIST)
	wantErrno(t, "mknod of a directory", e.v.Mknod("dir/x", fs.ModeDir|0o755, 0), syscall.EINVAL)
	must(t, e.v.Mknod("dir/reg", 0o600, 0)) // mknod(2) of a regular file
	vfstest.WantContent(t, e.v, "dir/reg", "")

	check := func(when string) {
		t.Helper()
		ents, err := e.v.ReadDir("dir")
		must(t, err)
		types := map[string]fs.FileMode{}
		for _, de := range ents {
			types["dir/"+de.Name()] = de.Type()
		}
		for name, typ := range kinds {
			if types[name] != typ {
				t.Errorf("%s: %s listed as type %v, want %v", when, name, types[name], typ)
			}
			fi, err := e.v.Lstat(name)
			must(t, err)
			if fi.Mode().Type() != typ || fi.Mode().Perm() != 0o640 || fi.Size() != 0 {
				t.Errorf("%s: %s is %v size %d, want %v", when, name, fi.Mode(), fi.Size(), typ|0o640)
			}
			rdev := attrOf(t, fi).Rdev
			if typ&fs.ModeDevice != 0 && rdev != unix.Mkdev(1, 3) || typ&fs.ModeDevice == 0 && rdev != 0 {
				t.Errorf("%s: %s has device %#x", when, name, rdev)
			}
		}
	}
	check("made")
	e.reopen()
	check("after a restart")

	for name := range kinds {
		_, err := e.v.Open(name)
		wantErrno(t, "open "+name, err, syscall.ENXIO)
		_, err = e.v.OpenFile(name, os.O_WRONLY, 0)
		wantErrno(t, "open for writing "+name, err, syscall.ENXIO)
		wantErrno(t, "truncate "+name, e.v.Truncate(name, 0), syscall.EINVAL)
		wantErrno(t, "setxattr "+name, e.v.Setxattr(name, "user.a", []byte("v"), 0), syscall.EPERM)
	}

	must(t, e.v.Chmod("dir/fifo", 0o600))
	must(t, e.v.Link("dir/fifo", "dir/fifo2"))
	must(t, e.v.Rename("dir/fifo2", "fifo3"))
	for _, name := range []string{"dir/fifo", "fifo3"} {
		fi, err := e.v.Lstat(name)
		must(t, err)
		if fi.Mode() != fs.ModeNamedPipe|0o600 || attrOf(t, fi).Nlink != 2 {
			t.Errorf("%s after chmod, link and rename: %v, %d links", name, fi.Mode(), attrOf(t, fi).Nlink)
		}
	}
	must(t, e.v.Remove("dir/sock"))
	vfstest.WantMissing(t, e.v, "dir/sock")
	st, err := e.d.Status()
	must(t, err)
	var added []string
	for _, s := range st {
		added = append(added, s.Letter()+" "+s.Path)
	}
	want := []string{"A dir/blk", "A dir/chr", "A dir/fifo", "A dir/reg", "A fifo3"}
	if len(added) != len(want) {
		t.Fatalf("status %v, want %v", added, want)
	}
	for i := range want {
		if added[i] != want[i] {
			t.Fatalf("status %v, want %v", added, want)
		}
	}
	checkSnapshot(t, e.root, disk) // the disk is untouched
}

// TestLowerSpecialFiles: a FIFO on disk is chmod'ed, linked, renamed and
// deleted in the draft without the view ever opening it (which would
// block until a writer came).
func TestLowerSpecialFiles(t *testing.T) {
	e := newViewEnv(t, map[string]string{"f": "x"})
	must(t, unix.Mkfifo(e.disk("pipe"), 0o644))
	must(t, e.v.Chmod("pipe", 0o600))
	fi, err := e.v.Lstat("pipe")
	must(t, err)
	if fi.Mode() != fs.ModeNamedPipe|0o600 {
		t.Fatalf("after chmod: %v", fi.Mode())
	}
	must(t, e.v.Link("pipe", "pipe2"))
	must(t, e.v.Rename("pipe2", "pipe3"))
	ents, err := e.v.ReadDir("")
	must(t, err)
	for _, de := range ents {
		if de.Name() == "pipe3" && de.Type() != fs.ModeNamedPipe {
			t.Errorf("pipe3 listed as %v", de.Type())
		}
	}
	must(t, e.v.Rename("f", "g"))
	must(t, e.v.Rename("pipe", "pipe4")) // a lower FIFO renamed: a redirect
	ents, err = e.v.ReadDir("")
	must(t, err)
	for _, de := range ents {
		if de.Name() == "pipe4" && de.Type() != fs.ModeNamedPipe {
			t.Errorf("pipe4 listed as %v", de.Type())
		}
	}
	must(t, e.v.Remove("pipe3"))
	if _, err := e.d.Status(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.d.Diff(); err != nil {
		t.Fatal(err)
	}
}

// TestLowerFIFOOpen: opening a FIFO that only the disk has through the
// view (as an MCP or ACP read does) answers at once instead of waiting
// for a writer: ENXIO, the kernel serves a FIFO's I/O, not the view.
func TestLowerFIFOOpen(t *testing.T) {
	e := newViewEnv(t, map[string]string{"d/": ""})
	must(t, unix.Mkfifo(e.disk("d/pipe"), 0o666))
	must(t, unix.Mkfifo(e.disk("d/moved"), 0o666))
	must(t, e.v.Rename("d/moved", "d/renamed")) // a redirect to the lower FIFO
	for _, name := range []string{"d/pipe", "d/renamed"} {
		done := make(chan error, 3)
		go func() {
			_, err := e.v.Open(name)
			done <- err
			_, err = e.v.OpenFile(name, os.O_RDWR, 0)
			done <- err
			_, err = afero.ReadFile(e.v, name)
			done <- err
		}()
		for _, what := range []string{"open", "open for writing", "read"} {
			select {
			case err := <-done:
				wantErrno(t, what+" "+name, err, syscall.ENXIO)
			case <-time.After(time.Minute): // a watchdog, not a timing
				t.Fatalf("%s %s waits for a writer", what, name)
			}
		}
	}
}

// TestCommitSpecialFiles: a commit makes the draft's FIFOs and (as
// root) device nodes on disk, with their modes, and a socket as nothing;
// what they replaced is kept for undo, which puts it back without ever
// opening a FIFO.
func TestCommitSpecialFiles(t *testing.T) {
	e := newViewEnv(t, map[string]string{"was-file": "old"})
	must(t, unix.Mkfifo(e.disk("was-fifo"), 0o600))
	must(t, e.v.Mknod("fifo", fs.ModeNamedPipe|0o640, 0))
	must(t, e.v.Mknod("sock", fs.ModeSocket|0o755, 0))
	must(t, e.v.Link("fifo", "fifo-link"))
	must(t, e.v.Remove("was-file"))
	must(t, e.v.Mknod("was-file", fs.ModeNamedPipe|0o604, 0)) // a FIFO over a file
	must(t, e.v.Remove("was-fifo"))
	mustWrite(t, e.v, "was-fifo", "a file over a FIFO")
	root := os.Geteuid() == 0
	if root {
		must(t, e.v.Mknod("null", fs.ModeDevice|fs.ModeCharDevice|0o666, unix.Mkdev(1, 3)))
	}
	if _, err := e.d.Commit(overlay.CommitOptions{Source: overlay.SourceCLI}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]fs.FileMode{"fifo": fs.ModeNamedPipe | 0o640, "was-file": fs.ModeNamedPipe | 0o604} {
		fi, err := os.Lstat(e.disk(name))
		if err != nil || fi.Mode() != want {
			t.Errorf("committed %s: %v (%v), want %v", name, fi, err, want)
		}
	}
	if b, err := os.ReadFile(e.disk("was-fifo")); err != nil || string(b) != "a file over a FIFO" {
		t.Errorf("file committed over a FIFO: %q, %v", b, err)
	}
	if _, err := os.Lstat(e.disk("sock")); !os.IsNotExist(err) {
		t.Errorf("a socket was committed as something: %v", err)
	}
	var fifo, link unix.Stat_t
	if err := errors.Join(unix.Lstat(e.disk("fifo"), &fifo), unix.Lstat(e.disk("fifo-link"), &link)); err != nil ||
		fifo.Ino != link.Ino || fifo.Nlink != 2 {
		t.Errorf("hard-linked FIFO committed as inodes %d and %d (%d links), %v: want one", fifo.Ino, link.Ino, fifo.Nlink, err)
	}
	if root {
		var st unix.Stat_t
		if err := unix.Lstat(e.disk("null"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != unix.Mkdev(1, 3) {
			t.Errorf("committed device: %+v, %v", st, err)
		}
	}
	if _, err := e.d.Undo(overlay.SourceCLI); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(e.disk("was-file")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("undo: was-file is %v, %v", fi, err) // reading a FIFO would wait
	}
	if b, err := os.ReadFile(e.disk("was-file")); err != nil || string(b) != "old" {
		t.Errorf("undo: was-file %q, %v", b, err)
	}
	if fi, err := os.Lstat(e.disk("was-fifo")); err != nil || fi.Mode() != fs.ModeNamedPipe|0o600 {
		t.Errorf("undo: was-fifo %v, %v", fi, err)
	}
	for _, name := range []string{"fifo", "fifo-link"} {
		if _, err := os.Lstat(e.disk(name)); !os.IsNotExist(err) {
			t.Errorf("undo left the committed %s: %v", name, err)
		}
	}
	if fi, err := e.v.Lstat("fifo"); err != nil || fi.Mode() != fs.ModeNamedPipe|0o640 {
		t.Errorf("undo: the FIFO is back in the draft as %v, %v", fi, err)
	}
}
