//go:build linux

package overlay_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay"
)

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

// TestCtimeInRecord: the ctime a chmod, a chown (to another owner or
// the same) and a rename of a draft file move is the inode's, kept in
// its record: the data file is not touched (each touch journals its
// inode), the view's ctime moves past the write before it, a write
// after it moves it again, and a restart keeps it.
func TestCtimeInRecord(t *testing.T) {
	e := newViewEnv(t, nil)
	mustWrite(t, e.v, "f", "content")
	uid, gid := os.Getuid(), os.Getgid()
	mode := fs.FileMode(0o640)
	for _, c := range []struct {
		what string
		op   func() error
	}{
		{"chmod", func() error { return e.v.Chmod("f", mode) }},
		{"chown to the same owner", func() error { return e.v.Setattr("f", overlay.Attrs{Uid: &uid, Gid: &gid}) }},
		{"chown", func() error { return e.v.Chown("f", uid, 12345) }},
		{"rename", func() error { return e.v.Rename("f", "g") }},
	} {
		key := "f"
		if c.what == "rename" {
			key = "g"
		}
		var data unix.Stat_t
		must(t, unix.Lstat(overlay.DataFile(e.v, "f"), &data))
		before := ctimeOf(t, e.v, "f")
		time.Sleep(20 * time.Millisecond) // past a tick of the kernel's clock
		must(t, c.op())
		var now unix.Stat_t
		must(t, unix.Lstat(overlay.DataFile(e.v, key), &now))
		if now.Ctim != data.Ctim {
			t.Errorf("%s moved the data file's ctime", c.what)
		}
		after := ctimeOf(t, e.v, key)
		if !after.After(before) {
			t.Errorf("%s left the ctime at %v", c.what, after)
		}
		e.reopen()
		if again := ctimeOf(t, e.v, key); !again.Equal(after) {
			t.Errorf("after %s a restart moved the ctime from %v to %v", c.what, after, again)
		}
		if key == "g" {
			must(t, e.v.Rename("g", "f"))
		}
	}
	before := ctimeOf(t, e.v, "f")
	time.Sleep(20 * time.Millisecond)
	f, err := e.v.OpenFile("f", os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt([]byte("C"), 0)
	must(t, err)
	must(t, f.Close())
	if after := ctimeOf(t, e.v, "f"); !after.After(before) {
		t.Errorf("a write after a chmod left the ctime at %v", after)
	}
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

// TestSetattrStat: what SetattrStat returns is what Lstat says right
// after, for each kind of change: a copy-up, a draft file's times and
// mode, a chown to the owner it has, a truncate, a lower directory.
func TestSetattrStat(t *testing.T) {
	e := newViewEnv(t, map[string]string{"lower": "text", "ldir/": ""})
	mustWrite(t, e.v, "draft", "content")
	mode, uid := fs.FileMode(0o600), os.Getuid()
	mtime := time.Unix(1_600_000_000, 5)
	size := int64(2)
	for _, c := range []struct {
		name string
		a    overlay.Attrs
	}{
		{"lower", overlay.Attrs{Mode: &mode}},
		{"draft", overlay.Attrs{Mtime: &mtime}},
		{"draft", overlay.Attrs{Mode: &mode}},
		{"draft", overlay.Attrs{Uid: &uid}},
		{"draft", overlay.Attrs{Size: &size}},
		{"ldir", overlay.Attrs{Mtime: &mtime}},
	} {
		got, err := e.v.SetattrStat(c.name, c.a)
		must(t, err)
		want, err := e.v.Lstat(c.name)
		must(t, err)
		ga, wa := attrOf(t, got), attrOf(t, want)
		if got.Mode() != want.Mode() || got.Size() != want.Size() || !got.ModTime().Equal(want.ModTime()) || *ga != *wa {
			t.Errorf("%s after %+v: SetattrStat says %v %d %v %+v, Lstat %v %d %v %+v", c.name, c.a,
				got.Mode(), got.Size(), got.ModTime(), *ga, want.Mode(), want.Size(), want.ModTime(), *wa)
		}
	}
}

// TestCtimeOnlyRecordedLater: a chmod or chown to what a draft file has
// (tar's chown to its own user) moves its ctime without a log record of
// its own; the draft's next record carries it, as do an fsync, the
// quiet period's flush and a close, so only a crash before any of them
// shows the ctime of the file's last record.
func TestCtimeOnlyRecordedLater(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	ws, err := overlay.Open(overlay.Options{Root: root, StateDir: state, Quiet: time.Hour})
	must(t, err)
	defer func() { ws.Close() }()
	d, err := ws.Draft("")
	must(t, err)
	v := d.Fs(overlay.SourceMount)
	mustWrite(t, v, "f", "content")
	mustWrite(t, v, "g", "other")
	wal := filepath.Join(filepath.Dir(filepath.Dir(overlay.DataFile(v, "f"))), "draft.wal")
	uid, gid := os.Getuid(), os.Getgid()
	// same chowns f to its owner, past a tick of the kernel's clock,
	// and returns the ctime the view shows after.
	same := func() time.Time {
		t.Helper()
		time.Sleep(20 * time.Millisecond)
		must(t, v.Setattr("f", overlay.Attrs{Uid: &uid, Gid: &gid}))
		return ctimeOf(t, v, "f")
	}
	// recorded is f's ctime as a daemon killed now would find it.
	recorded := func() time.Time {
		t.Helper()
		c, err := overlay.RecordedCtime(v, "f", t.TempDir())
		must(t, err)
		return c
	}
	before := recorded()
	walBefore, err := os.Stat(wal)
	must(t, err)
	moved := same()
	if !moved.After(before) {
		t.Fatalf("a chown to the same owner left the ctime at %v", moved)
	}
	if walNow, err := os.Stat(wal); err != nil || walNow.Size() != walBefore.Size() {
		t.Fatalf("a chown to the same owner wrote %d bytes of log (%v)", walNow.Size()-walBefore.Size(), err)
	}
	if got := recorded(); !got.Equal(before) {
		t.Fatalf("before any record the store has ctime %v, want %v", got, before)
	}
	must(t, v.Chmod("g", 0o600)) // another file's record carries f's ctime
	if got := recorded(); !got.Equal(moved) {
		t.Fatalf("after the next record the store has ctime %v, want %v", got, moved)
	}
	if got := ctimeOf(t, v, "f"); !got.Equal(moved) {
		t.Fatalf("the next record moved f's ctime to %v", got)
	}
	// An fsync carries it.
	moved = same()
	must(t, v.Sync())
	if got := recorded(); !got.Equal(moved) {
		t.Fatalf("after an fsync the store has ctime %v, want %v", got, moved)
	}
	// A close carries it.
	moved = same()
	must(t, ws.Close())
	ws, err = overlay.Open(overlay.Options{Root: root, StateDir: state, Quiet: 50 * time.Millisecond})
	must(t, err)
	d, err = ws.Draft("")
	must(t, err)
	v = d.Fs(overlay.SourceMount)
	if got := ctimeOf(t, v, "f"); !got.Equal(moved) {
		t.Fatalf("after a restart the ctime is %v, want %v", got, moved)
	}
	// So does the quiet period.
	moved = same()
	deadline := time.Now().Add(10 * time.Second)
	for !recorded().Equal(moved) {
		if time.Now().After(deadline) {
			t.Fatalf("the quiet period did not record the ctime %v", moved)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
