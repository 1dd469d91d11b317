//go:build linux

package overlay_test

import (
	"errors"
	"io/fs"
	"os"
	"slices"
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

// ctimeOf is name's ctime in the view, without following a symlink.
func ctimeOf(t *testing.T, v *overlay.Fs, name string) time.Time {
	t.Helper()
	fi, err := v.Lstat(name)
	must(t, err)
	return attrOf(t, fi).Ctime
}

// TestCtime: every change of an inode moves its ctime, as on Linux
// (chmod, chown, utimes, link, unlink of another name, rename, truncate,
// write, setxattr), and a change of a directory's names moves the
// directory's mtime and ctime; reading and stat'ing move neither.
func TestCtime(t *testing.T) {
	e := newViewEnv(t, map[string]string{"lower": "text", "ldir/": ""})
	must(t, e.v.Mkdir("d", 0o755))
	mustWrite(t, e.v, "d/f", "content")
	must(t, e.v.Symlink("f", "d/l"))
	must(t, e.v.Mknod("d/p", fs.ModeNamedPipe|0o644, 0))
	// The kernel's file times tick coarsely: a pause longer than a tick
	// between two changes lets the later show a later time.
	tick := func() { time.Sleep(20 * time.Millisecond) }
	moves := func(what, name string, op func()) {
		t.Helper()
		before := ctimeOf(t, e.v, name)
		tick()
		op()
		if after := ctimeOf(t, e.v, name); !after.After(before) {
			t.Errorf("%s left the ctime of %s at %v", what, name, after)
		}
	}
	stays := func(what, name string, op func()) {
		t.Helper()
		before := ctimeOf(t, e.v, name)
		tick()
		op()
		if after := ctimeOf(t, e.v, name); !after.Equal(before) {
			t.Errorf("%s moved the ctime of %s from %v to %v", what, name, before, after)
		}
	}
	uid := os.Getuid()
	for _, name := range []string{"d/f", "d/p", "d", "lower", "ldir"} {
		fi, err := e.v.Lstat(name)
		must(t, err)
		same := fi.Mode() & fs.ModePerm
		moves("chmod to the same mode", name, func() { must(t, e.v.Setattr(name, overlay.Attrs{Mode: &same})) })
		ouid, ogid := int(attrOf(t, fi).Uid), int(attrOf(t, fi).Gid)
		moves("chown to the same owner", name, func() { must(t, e.v.Setattr(name, overlay.Attrs{Uid: &ouid, Gid: &ogid})) })
		moves("chmod", name, func() { must(t, e.v.Chmod(name, 0o700)) })
		moves("chown", name, func() { must(t, e.v.Chown(name, uid, 12345)) })
		moves("utimes", name, func() {
			must(t, e.v.Chtimes(name, time.Unix(1e9, 5), time.Unix(1e9, 7)))
		})
		stays("stat", name, func() { e.v.Lstat(name) })
		fi, err = e.v.Lstat(name)
		must(t, err)
		if !fi.ModTime().Equal(time.Unix(1e9, 7)) || !attrOf(t, fi).Atime.Equal(time.Unix(1e9, 5)) {
			t.Errorf("%s: utimes to (1e9.5, 1e9.7) gave atime %v, mtime %v", name, attrOf(t, fi).Atime, fi.ModTime())
		}
	}
	moves("setxattr", "d/f", func() { must(t, e.v.Setxattr("d/f", "user.a", []byte("1"), 0)) })
	moves("lsetattr", "d/l", func() {
		gid := 23456
		must(t, e.v.Setattr("d/l", overlay.Attrs{Gid: &gid}))
	})
	moves("truncate", "d/f", func() { must(t, e.v.Truncate("d/f", 2)) })
	moves("write", "d/f", func() {
		f, err := e.v.OpenFile("d/f", os.O_WRONLY, 0)
		must(t, err)
		_, err = f.Write([]byte("x"))
		must(t, err)
		must(t, f.Close())
	})
	stays("read", "d/f", func() { mustRead(t, e.v, "d/f") })
	moves("link", "d/f", func() { must(t, e.v.Link("d/f", "d/f2")) })
	moves("unlink of another name", "d/f", func() { must(t, e.v.Remove("d/f2")) })
	before := ctimeOf(t, e.v, "d/p")
	tick()
	must(t, e.v.Rename("d/p", "d/p2"))
	if after := ctimeOf(t, e.v, "d/p2"); !after.After(before) {
		t.Errorf("rename left the ctime at %v", after)
	}
	moves("link", "d/p2", func() { must(t, e.v.Link("d/p2", "d/p3")) })
	moves("unlink of another name", "d/p2", func() { must(t, e.v.Remove("d/p3")) })

	dirMoves := func(what string, op func()) { t.Helper(); dirTimesMove(t, e.v, "d", what, op) }
	dirMoves("create", func() { mustWrite(t, e.v, "d/new", "") })
	dirMoves("mkdir", func() { must(t, e.v.Mkdir("d/sub", 0o755)) })
	dirMoves("mknod", func() { must(t, e.v.Mknod("d/fifo", fs.ModeNamedPipe|0o600, 0)) })
	dirMoves("symlink", func() { must(t, e.v.Symlink("x", "d/l2")) })
	dirMoves("link", func() { must(t, e.v.Link("d/new", "d/new2")) })
	dirMoves("unlink", func() { must(t, e.v.Remove("d/new2")) })
	dirMoves("rmdir", func() { must(t, e.v.Remove("d/sub")) })
	dirMoves("rename within", func() { must(t, e.v.Rename("d/new", "d/new3")) })
	dirMoves("rename out", func() { must(t, e.v.Rename("d/new3", "out")) })
	dirMoves("rename in", func() { must(t, e.v.Rename("out", "d/in")) })
	e.reopen()
	stays("a restart", "d/f", func() {})
	stays("a restart", "d/p2", func() {})
}

// dirTimesMove fails the test unless op moves the mtime and ctime of
// the directory dir.
func dirTimesMove(t *testing.T, v *overlay.Fs, dir, what string, op func()) {
	t.Helper()
	before, err := v.Lstat(dir)
	must(t, err)
	time.Sleep(20 * time.Millisecond) // past a tick of the kernel's clock
	op()
	after, err := v.Lstat(dir)
	must(t, err)
	if !after.ModTime().After(before.ModTime()) || !attrOf(t, after).Ctime.After(attrOf(t, before).Ctime) {
		t.Errorf("%s in %s left its mtime at %v, ctime at %v", what, dir, after.ModTime(), attrOf(t, after).Ctime)
	}
}

// TestDiskDirectoryTimes: making and removing names in a directory that
// only the disk has moves its mtime and ctime in the view, as on a local
// disk, without the directory becoming a change to review or commit.
func TestDiskDirectoryTimes(t *testing.T) {
	e := newViewEnv(t, map[string]string{"ldir/old": "x", "ldir/sub/": "", "other/keep": "k"})
	old := time.Unix(1e9, 0)
	for _, dir := range []string{"ldir", "ldir/sub", "other"} {
		must(t, os.Chtimes(e.disk(dir), old, old))
	}
	moves := func(dir, what string, op func()) { t.Helper(); dirTimesMove(t, e.v, dir, what, op) }
	moves("ldir", "create", func() { mustWrite(t, e.v, "ldir/new", "") })
	moves("ldir/sub", "mkdir", func() { must(t, e.v.Mkdir("ldir/sub/d", 0o755)) })
	moves("ldir/sub", "rmdir", func() { must(t, e.v.Remove("ldir/sub/d")) })
	moves("ldir", "unlink", func() { must(t, e.v.Remove("ldir/old")) })
	moves("other", "rename in", func() { must(t, e.v.Rename("ldir/new", "other/new")) })
	moves("ldir", "rename out", func() { must(t, e.v.Rename("other/new", "ldir/back")) })
	moves("ldir", "symlink", func() { must(t, e.v.Symlink("back", "ldir/l")) })
	moves("ldir", "mknod", func() { must(t, e.v.Mknod("ldir/p", fs.ModeNamedPipe|0o600, 0)) })
	for _, dir := range []string{"ldir/sub", "other"} {
		if fi, err := e.v.Lstat(dir); err != nil || !fi.ModTime().After(old) {
			t.Errorf("%s: mtime %v (%v) after names came and went in it", dir, fi.ModTime(), err)
		}
	}
	// A chmod to what a disk file has moves its ctime, copying nothing.
	mode := fs.FileMode(0o644)
	must(t, os.Chmod(e.disk("other/keep"), mode))
	before := ctimeOf(t, e.v, "other/keep")
	time.Sleep(20 * time.Millisecond)
	must(t, e.v.Setattr("other/keep", overlay.Attrs{Mode: &mode}))
	if after := ctimeOf(t, e.v, "other/keep"); !after.After(before) {
		t.Errorf("a chmod to the same mode left the ctime of a disk file at %v", after)
	}
	e.reopen()
	if fi, err := e.v.Lstat("ldir"); err != nil || !fi.ModTime().After(old) {
		t.Errorf("ldir after a restart: mtime %v (%v)", fi.ModTime(), err)
	}
	st, err := e.d.Status()
	must(t, err)
	var paths []string
	for _, s := range st {
		paths = append(paths, s.Change+" "+s.Path)
	}
	if want := []string{"added ldir/back", "added ldir/l", "deleted ldir/old", "added ldir/p"}; !slices.Equal(paths, want) {
		t.Errorf("status %q, want %q: the directories themselves are no change", paths, want)
	}
	if _, err := e.d.Commit(overlay.CommitOptions{Source: overlay.SourceCLI}); err != nil {
		t.Fatal(err)
	}
	if st, err := e.d.Status(); err != nil || len(st) != 0 {
		t.Errorf("status after the commit: %v, %v", st, err)
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
