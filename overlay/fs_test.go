//go:build linux

package overlay_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/overlay"
)

// behaviour is one POSIX behaviour tools rely on, checked on the merged
// view of a fresh workspace holding tree. Unless the case changes the
// disk itself (diskChanges), the workspace on disk must be untouched.
type behaviour struct {
	name        string
	tree        map[string]string
	diskChanges bool
	run         func(t *testing.T, e *viewEnv)
}

func TestBehaviour(t *testing.T) {
	for _, c := range behaviours {
		t.Run(c.name, func(t *testing.T) {
			e := newViewEnv(t, c.tree)
			before := diskSnapshot(t, e.root)
			c.run(t, e)
			if !c.diskChanges {
				checkSnapshot(t, e.root, before)
			}
		})
	}
}

func inoOf(t testing.TB, e *viewEnv, name string) uint64 {
	t.Helper()
	fi, err := e.v.Lstat(name)
	must(t, err)
	return attrOf(t, fi).Ino
}

func diskIno(t testing.TB, p string) uint64 {
	t.Helper()
	fi, err := os.Lstat(p)
	must(t, err)
	return fi.Sys().(*syscall.Stat_t).Ino
}

func names(t testing.TB, e *viewEnv, dir string) []string {
	t.Helper()
	ents, err := e.v.ReadDir(dir)
	must(t, err)
	var out []string
	for _, de := range ents {
		out = append(out, de.Name())
	}
	return out
}

func wantNames(t testing.TB, e *viewEnv, dir string, want ...string) {
	t.Helper()
	if got := names(t, e, dir); !slices.Equal(got, want) {
		t.Fatalf("ReadDir(%q) = %q, want %q", dir, got, want)
	}
}

func wantContent(t testing.TB, e *viewEnv, name, want string) {
	t.Helper()
	if got := mustRead(t, e.v, name); got != want {
		t.Fatalf("%s holds %q, want %q", name, got, want)
	}
	fi, err := e.v.Stat(name)
	must(t, err)
	if fi.Size() != int64(len(want)) {
		t.Fatalf("%s: size %d, want %d", name, fi.Size(), len(want))
	}
}

func wantMissing(t testing.TB, e *viewEnv, name string) {
	t.Helper()
	_, err := e.v.Lstat(name)
	wantErrno(t, "lstat "+name, err, syscall.ENOENT)
}

var behaviours = []behaviour{
	{
		name: "rename over an existing file",
		tree: map[string]string{"a": "from a", "b": "from b"},
		run: func(t *testing.T, e *viewEnv) {
			ino := inoOf(t, e, "a")
			must(t, e.v.Rename("a", "b"))
			wantContent(t, e, "b", "from a")
			wantMissing(t, e, "a")
			if got := inoOf(t, e, "b"); got != ino {
				t.Fatalf("b's inode %d, want a's %d", got, ino)
			}
			wantNames(t, e, "", "b")
			// A draft file over a draft file.
			mustWrite(t, e.v, "c", "new c")
			must(t, e.v.Rename("c", "b"))
			wantContent(t, e, "b", "new c")
			wantNames(t, e, "", "b")
		},
	},
	{
		name: "rename errors",
		tree: map[string]string{"f": "f", "d/x": "x", "e/": "", "g/": ""},
		run: func(t *testing.T, e *viewEnv) {
			wantErrno(t, "dir into itself", e.v.Rename("d", "d/sub"), syscall.EINVAL)
			wantErrno(t, "dir over file", e.v.Rename("d", "f"), syscall.ENOTDIR)
			wantErrno(t, "file over dir", e.v.Rename("f", "e"), syscall.EISDIR)
			wantErrno(t, "dir over non-empty dir", e.v.Rename("e", "d"), syscall.ENOTEMPTY)
			wantErrno(t, "missing source", e.v.Rename("nope", "x"), syscall.ENOENT)
			wantErrno(t, "missing target parent", e.v.Rename("f", "no/f"), syscall.ENOENT)
			wantErrno(t, "target parent a file", e.v.Rename("d", "f/d"), syscall.ENOTDIR)
			must(t, e.v.Rename("e", "g")) // over an empty directory
			wantNames(t, e, "", "d", "f", "g")
			must(t, e.v.Rename("f", "f")) // onto itself: nothing happens
			wantContent(t, e, "f", "f")
		},
	},
	{
		name: "unlink while open",
		tree: map[string]string{"disk": "disk content", "edit": "0123456789"},
		run: func(t *testing.T, e *viewEnv) {
			ro, err := e.v.Open("disk")
			must(t, err)
			defer ro.Close()
			rw, err := e.v.OpenFile("edit", os.O_RDWR, 0)
			must(t, err)
			defer rw.Close()
			must(t, e.v.Remove("disk"))
			must(t, e.v.Remove("edit"))
			wantMissing(t, e, "disk")
			wantMissing(t, e, "edit")
			b, err := io.ReadAll(ro)
			must(t, err)
			if string(b) != "disk content" {
				t.Fatalf("read-only handle after unlink: %q", b)
			}
			_, err = rw.WriteAt([]byte("AB"), 2)
			must(t, err)
			buf := make([]byte, 10)
			n, err := rw.ReadAt(buf, 0)
			if n != 10 || string(buf) != "01AB456789" {
				t.Fatalf("read-write handle after unlink: %q, %v", buf[:n], err)
			}
			fi, err := rw.Stat()
			must(t, err)
			if fi.Size() != 10 || attrOf(t, fi).Nlink != 0 {
				t.Fatalf("unlinked handle: size %d nlink %d, want 10 and 0", fi.Size(), attrOf(t, fi).Nlink)
			}
			wantNames(t, e, "")
		},
	},
	{
		name: "read-only handle opened before another handle writes",
		tree: map[string]string{"f": "old text"},
		run: func(t *testing.T, e *viewEnv) {
			ro, err := e.v.Open("f")
			must(t, err)
			defer ro.Close()
			w, err := e.v.OpenFile("f", os.O_WRONLY, 0)
			must(t, err)
			_, err = w.WriteAt([]byte("NEW"), 0)
			must(t, err)
			must(t, w.Close())
			b, err := io.ReadAll(ro)
			must(t, err)
			if string(b) != "NEW text" {
				t.Fatalf("a handle opened before the write reads %q, want the file's new content", b)
			}
		},
	},
	{
		name: "O_APPEND",
		tree: map[string]string{"log": "abc"},
		run: func(t *testing.T, e *viewEnv) {
			f, err := e.v.OpenFile("log", os.O_WRONLY|os.O_APPEND, 0)
			must(t, err)
			_, err = f.Write([]byte("de"))
			must(t, err)
			_, err = f.Seek(0, io.SeekStart)
			must(t, err)
			_, err = f.Write([]byte("fg"))
			must(t, err)
			must(t, f.Close())
			wantContent(t, e, "log", "abcdefg")
			f, err = e.v.OpenFile("new", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			must(t, err)
			_, err = f.Write([]byte("x"))
			must(t, err)
			must(t, f.Close())
			wantContent(t, e, "new", "x")
		},
	},
	{
		name: "truncate",
		tree: map[string]string{"f": "0123456789", "g": "abc", "d/": ""},
		run: func(t *testing.T, e *viewEnv) {
			must(t, e.v.Truncate("f", 4))
			wantContent(t, e, "f", "0123")
			must(t, e.v.Truncate("f", 6))
			wantContent(t, e, "f", "0123\x00\x00")
			must(t, e.v.Truncate("g", 0))
			wantContent(t, e, "g", "")
			wantErrno(t, "truncate a directory", e.v.Truncate("d", 0), syscall.EISDIR)
			wantErrno(t, "truncate to a negative size", e.v.Truncate("f", -1), syscall.EINVAL)
			wantErrno(t, "truncate a missing file", e.v.Truncate("nope", 0), syscall.ENOENT)
			f, err := e.v.OpenFile("f", os.O_RDWR|os.O_TRUNC, 0)
			must(t, err)
			must(t, f.Truncate(3))
			must(t, f.Close())
			wantContent(t, e, "f", "\x00\x00\x00")
		},
	},
	{
		name: "O_EXCL and O_CREATE",
		tree: map[string]string{"f": "f", "d/": "", "l": "->missing"},
		run: func(t *testing.T, e *viewEnv) {
			_, err := e.v.OpenFile("f", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
			wantErrno(t, "O_EXCL over a file", err, syscall.EEXIST)
			_, err = e.v.OpenFile("l", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
			wantErrno(t, "O_EXCL over a dangling symlink", err, syscall.EEXIST)
			_, err = e.v.OpenFile("d", os.O_RDWR, 0)
			wantErrno(t, "open a directory for writing", err, syscall.EISDIR)
			_, err = e.v.OpenFile("nope/f", os.O_RDWR|os.O_CREATE, 0o644)
			wantErrno(t, "create in a missing directory", err, syscall.ENOENT)
			_, err = e.v.OpenFile("f/x", os.O_RDWR|os.O_CREATE, 0o644)
			wantErrno(t, "create below a file", err, syscall.ENOTDIR)
			_, err = e.v.OpenFile("nope", os.O_RDONLY, 0)
			wantErrno(t, "open a missing file", err, syscall.ENOENT)
			f, err := e.v.OpenFile("l", os.O_RDWR|os.O_CREATE, 0o600)
			must(t, err) // creates the symlink's target
			must(t, f.Close())
			fi, err := e.v.Lstat("missing")
			must(t, err)
			if fi.Mode() != 0o600 {
				t.Fatalf("created through a symlink: mode %v, want 0600", fi.Mode())
			}
		},
	},
	{
		name: "mtime after write and after chtimes",
		tree: map[string]string{"f": "f", "d/": ""},
		run: func(t *testing.T, e *viewEnv) {
			old := time.Date(2001, 2, 3, 4, 5, 6, 7000, time.UTC)
			must(t, e.v.Chtimes("f", old, old))
			fi, err := e.v.Stat("f")
			must(t, err)
			if !fi.ModTime().Equal(old) {
				t.Fatalf("mtime after chtimes %v, want %v", fi.ModTime(), old)
			}
			f, err := e.v.OpenFile("f", os.O_WRONLY|os.O_APPEND, 0)
			must(t, err)
			_, err = f.Write([]byte("more"))
			must(t, err)
			must(t, f.Close())
			fi, err = e.v.Stat("f")
			must(t, err)
			if !fi.ModTime().After(old) {
				t.Fatalf("mtime after write %v, not after %v", fi.ModTime(), old)
			}
			must(t, e.v.Chtimes("d", old, old))
			fi, err = e.v.Stat("d")
			must(t, err)
			if !fi.ModTime().Equal(old) {
				t.Fatalf("directory mtime after chtimes %v, want %v", fi.ModTime(), old)
			}
			// Reopening keeps both.
			e.reopen()
			fi, err = e.v.Stat("d")
			must(t, err)
			if !fi.ModTime().Equal(old) {
				t.Fatalf("directory mtime after reopen %v, want %v", fi.ModTime(), old)
			}
		},
	},
	{
		name: "copy-up keeps mode, mtime and inode",
		tree: map[string]string{"x.sh": "#!/bin/sh\n"},
		run: func(t *testing.T, e *viewEnv) {
			must(t, os.Chmod(e.disk("x.sh"), 0o751))
			old := time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC)
			must(t, os.Chtimes(e.disk("x.sh"), old, old))
			before := diskIno(t, e.disk("x.sh"))
			if got := inoOf(t, e, "x.sh"); got != before {
				t.Fatalf("lower inode %d, want the disk's %d", got, before)
			}
			must(t, e.v.Chmod("x.sh", 0o700)) // copies up without writing
			fi, err := e.v.Lstat("x.sh")
			must(t, err)
			if fi.Mode() != 0o700 || !fi.ModTime().Equal(old) || attrOf(t, fi).Ino != before {
				t.Fatalf("after chmod: mode %v mtime %v ino %d, want 0700, %v, %d", fi.Mode(), fi.ModTime(), attrOf(t, fi).Ino, old, before)
			}
			wantContent(t, e, "x.sh", "#!/bin/sh\n")
			must(t, e.v.Rename("x.sh", "y.sh"))
			if got := inoOf(t, e, "y.sh"); got != before {
				t.Fatalf("inode after rename %d, want %d", got, before)
			}
			e.reopen()
			if got := inoOf(t, e, "y.sh"); got != before {
				t.Fatalf("inode after reopen %d, want %d", got, before)
			}
		},
		diskChanges: true,
	},
	{
		name: "hard links",
		tree: map[string]string{"f": "shared"},
		run: func(t *testing.T, e *viewEnv) {
			must(t, e.v.Link("f", "g"))
			for _, n := range []string{"f", "g"} {
				fi, err := e.v.Lstat(n)
				must(t, err)
				if attrOf(t, fi).Nlink != 2 {
					t.Fatalf("%s: nlink %d, want 2", n, attrOf(t, fi).Nlink)
				}
			}
			if inoOf(t, e, "f") != inoOf(t, e, "g") {
				t.Fatal("two names of one file have different inode numbers")
			}
			f, err := e.v.OpenFile("g", os.O_WRONLY|os.O_TRUNC, 0)
			must(t, err)
			_, err = f.Write([]byte("through g"))
			must(t, err)
			must(t, f.Close())
			wantContent(t, e, "f", "through g")
			must(t, e.v.Chmod("f", 0o600))
			fi, err := e.v.Lstat("g")
			must(t, err)
			if fi.Mode() != 0o600 {
				t.Fatalf("g's mode %v after chmod of f, want 0600", fi.Mode())
			}
			must(t, e.v.Remove("f"))
			fi, err = e.v.Lstat("g")
			must(t, err)
			if attrOf(t, fi).Nlink != 1 {
				t.Fatalf("g: nlink %d after f went, want 1", attrOf(t, fi).Nlink)
			}
			wantContent(t, e, "g", "through g")
			wantErrno(t, "link over an existing name", e.v.Link("g", "g"), syscall.EEXIST)
			wantErrno(t, "link a missing file", e.v.Link("nope", "h"), syscall.ENOENT)
			must(t, e.v.Mkdir("d", 0o755))
			wantErrno(t, "link a directory", e.v.Link("d", "h"), syscall.EPERM)
			e.reopen()
			must(t, e.v.Link("g", "d/h"))
			must(t, e.v.Rename("g", "d/g"))
			mustWrite(t, e.v, "d/h", "after reopen")
			wantContent(t, e, "d/g", "after reopen")
		},
	},
	{
		name: "symbolic links",
		tree: map[string]string{"dir/file": "in dir", "rel": "->dir/file", "dirlink": "->dir", "loop": "->loop"},
		run: func(t *testing.T, e *viewEnv) {
			wantContent(t, e, "rel", "in dir")
			mustWrite(t, e.v, "dir/file", "changed in draft")
			wantContent(t, e, "rel", "changed in draft")
			must(t, e.v.Symlink(filepath.Join(e.root, "dir", "file"), "abs"))
			wantContent(t, e, "abs", "changed in draft")
			must(t, e.v.Symlink("../rel", "dir/up"))
			wantContent(t, e, "dir/up", "changed in draft")
			target, err := e.v.Readlink("abs")
			must(t, err)
			if target != filepath.Join(e.root, "dir", "file") {
				t.Fatalf("readlink abs = %q", target)
			}
			fi, err := e.v.Lstat("abs")
			must(t, err)
			if fi.Mode()&fs.ModeSymlink == 0 || fi.Size() != int64(len(target)) {
				t.Fatalf("lstat of a symlink: mode %v size %d", fi.Mode(), fi.Size())
			}
			_, err = e.v.Readlink("dir/file")
			wantErrno(t, "readlink of a file", err, syscall.EINVAL)
			_, err = e.v.Stat("loop")
			wantErrno(t, "stat a symlink loop", err, syscall.ELOOP)
			wantErrno(t, "symlink over an existing name", e.v.Symlink("x", "rel"), syscall.EEXIST)
			must(t, e.v.Symlink("/etc/passwd", "escape"))
			_, err = e.v.Open("escape")
			if !errors.Is(err, overlay.ErrOutside) {
				t.Fatalf("open through a symlink leaving the workspace: %v, want ErrOutside", err)
			}
			ents, err := e.v.ReadDir("dirlink")
			must(t, err)
			if len(ents) != 2 || ents[0].Name() != "file" || ents[1].Name() != "up" {
				t.Fatalf("ReadDir through a symlink: %v", ents)
			}
		},
	},
	{
		name: "directory rename keeps its subtree and inode numbers",
		tree: map[string]string{"d/x": "x", "d/e/y": "y", "d/e/z": "z", "other": "o"},
		run: func(t *testing.T, e *viewEnv) {
			inos := map[string]uint64{}
			for _, k := range []string{"d", "d/x", "d/e", "d/e/y"} {
				inos[k] = inoOf(t, e, k)
			}
			mustWrite(t, e.v, "d/e/z", "z in draft")
			mustWrite(t, e.v, "d/new", "new")
			must(t, e.v.Remove("d/x"))
			must(t, e.v.Rename("d", "n"))
			wantMissing(t, e, "d")
			wantNames(t, e, "", "n", "other")
			wantNames(t, e, "n", "e", "new")
			wantNames(t, e, "n/e", "y", "z")
			wantContent(t, e, "n/e/y", "y")
			wantContent(t, e, "n/e/z", "z in draft")
			wantContent(t, e, "n/new", "new")
			for _, k := range []string{"d", "d/e", "d/e/y"} {
				if got := inoOf(t, e, "n"+k[1:]); got != inos[k] {
					t.Fatalf("%s: inode %d after rename, want %d", k, got, inos[k])
				}
			}
			// Into a subdirectory, and back over the old name.
			must(t, e.v.Mkdir("sub", 0o755))
			must(t, e.v.Rename("n", "sub/n"))
			wantContent(t, e, "sub/n/e/y", "y")
			must(t, e.v.Rename("sub/n/e", "d"))
			wantNames(t, e, "d", "y", "z")
			wantNames(t, e, "sub/n", "new")
			e.reopen()
			wantContent(t, e, "d/z", "z in draft")
			if got := inoOf(t, e, "d/y"); got != inos["d/e/y"] {
				t.Fatalf("inode after reopen %d, want %d", got, inos["d/e/y"])
			}
			// A directory made where the renamed one was is new and empty.
			must(t, e.v.Mkdir("n", 0o755))
			wantNames(t, e, "n")
		},
	},
	{
		name: "RENAME_NOREPLACE and RENAME_EXCHANGE",
		tree: map[string]string{"a": "A", "b": "B", "d/x": "x"},
		run: func(t *testing.T, e *viewEnv) {
			wantErrno(t, "noreplace over a file", e.v.Rename2("a", "b", overlay.RenameNoReplace), syscall.EEXIST)
			wantContent(t, e, "b", "B")
			must(t, e.v.Rename2("a", "c", overlay.RenameNoReplace))
			wantContent(t, e, "c", "A")
			ia, id := inoOf(t, e, "c"), inoOf(t, e, "d")
			must(t, e.v.Rename2("c", "d", overlay.RenameExchange))
			wantContent(t, e, "d", "A")
			wantContent(t, e, "c/x", "x")
			if inoOf(t, e, "d") != ia || inoOf(t, e, "c") != id {
				t.Fatal("exchange did not swap the inode numbers")
			}
			wantErrno(t, "exchange with a missing name", e.v.Rename2("b", "nope", overlay.RenameExchange), syscall.ENOENT)
			wantErrno(t, "exchange with a descendant", e.v.Rename2("c", "c/x", overlay.RenameExchange), syscall.EINVAL)
			must(t, e.v.Rename2("b", "d", overlay.RenameExchange))
			wantContent(t, e, "b", "A")
			wantContent(t, e, "d", "B")
		},
	},
	{
		name: "opaque directories",
		tree: map[string]string{"d/x": "x", "d/sub/y": "y"},
		run: func(t *testing.T, e *viewEnv) {
			wantErrno(t, "rmdir a non-empty directory", e.v.Remove("d"), syscall.ENOTEMPTY)
			must(t, e.v.RemoveAll("d"))
			wantMissing(t, e, "d")
			must(t, e.v.Mkdir("d", 0o755))
			wantNames(t, e, "d")
			wantMissing(t, e, "d/x")
			must(t, e.v.MkdirAll("d/sub", 0o755))
			wantNames(t, e, "d/sub")
			wantMissing(t, e, "d/sub/y")
			e.reopen()
			wantNames(t, e, "d", "sub")
			wantNames(t, e, "d/sub")
		},
	},
	{
		name:        "a disk change shows through where the draft has no entry",
		tree:        map[string]string{"f": "old", "d/a": "a", "e/": ""},
		diskChanges: true,
		run: func(t *testing.T, e *viewEnv) {
			mustWrite(t, e.v, "d/draft", "draft")
			wantContent(t, e, "f", "old")
			must(t, os.WriteFile(e.disk("f"), []byte("new on disk"), 0o644))
			wantContent(t, e, "f", "new on disk")
			must(t, os.WriteFile(e.disk("d/b"), []byte("b"), 0o644))
			wantNames(t, e, "d", "a", "b", "draft")
			must(t, os.Remove(e.disk("d/a")))
			wantNames(t, e, "d", "b", "draft")
			must(t, os.Remove(e.disk("e")))
			wantMissing(t, e, "e")
			// Where the draft has an entry, the disk no longer shows.
			mustWrite(t, e.v, "f", "draft f")
			must(t, os.WriteFile(e.disk("f"), []byte("newer on disk"), 0o644))
			wantContent(t, e, "f", "draft f")
		},
	},
	{
		name: "editor buffers shadow the disk; the draft shadows buffers",
		tree: map[string]string{"f": "disk", "g": "disk g"},
		run: func(t *testing.T, e *viewEnv) {
			must(t, e.bufs.Open("f", 1, []byte("buffer text")))
			wantContent(t, e, "f", "buffer text")
			r, err := e.v.Open("g")
			must(t, err)
			defer r.Close()
			must(t, e.bufs.Open("g", 1, []byte("buffer g")))
			b, err := io.ReadAll(r)
			must(t, err)
			if string(b) != "buffer g" {
				t.Fatalf("a handle opened before the buffer reads %q", b)
			}
			// The first write copies up from the buffer.
			f, err := e.v.OpenFile("f", os.O_WRONLY|os.O_APPEND, 0)
			must(t, err)
			_, err = f.Write([]byte(" + agent"))
			must(t, err)
			must(t, f.Close())
			wantContent(t, e, "f", "buffer text + agent")
			must(t, e.bufs.Open("f", 2, []byte("the user typed more")))
			wantContent(t, e, "f", "buffer text + agent")
			must(t, e.bufs.Close("g"))
			wantContent(t, e, "g", "disk g")
			// A saved buffer (not dirty) shows the disk.
			must(t, e.bufs.Open("g", 3, []byte("saved")))
			must(t, e.bufs.Save("g"))
			wantContent(t, e, "g", "disk g")
		},
	},
	{
		name: "new unsaved buffer files appear in listings",
		tree: map[string]string{"d/a": "a"},
		run: func(t *testing.T, e *viewEnv) {
			must(t, e.bufs.Open("d/untitled.go", 1, []byte("package d\n")))
			must(t, e.bufs.Open("top.txt", 1, []byte("top")))
			wantNames(t, e, "d", "a", "untitled.go")
			wantNames(t, e, "", "d", "top.txt")
			wantContent(t, e, "d/untitled.go", "package d\n")
			fi, err := e.v.Lstat("top.txt")
			must(t, err)
			if !fi.Mode().IsRegular() {
				t.Fatalf("buffer-only file: mode %v", fi.Mode())
			}
			ents, err := e.v.ReadDir("")
			must(t, err)
			if ents[1].Type() != 0 {
				t.Fatalf("buffer-only file listed with type %v", ents[1].Type())
			}
			must(t, e.v.Rename("top.txt", "d/moved.txt"))
			wantContent(t, e, "d/moved.txt", "top")
			wantNames(t, e, "", "d")
			must(t, e.v.Remove("d/untitled.go"))
			wantNames(t, e, "d", "a", "moved.txt")
		},
	},
	{
		name: "Resolve refuses escapes",
		tree: map[string]string{
			"dir/file": "f", "in": "->dir/file", "up": "->../outside", "etc": "->/etc",
			"dirlink": "->dir", "dir/back": "->../in",
		},
		run: func(t *testing.T, e *viewEnv) {
			must(t, e.v.Symlink(e.root+"/dir", "absin"))
			must(t, e.v.Symlink("../../..", "dir/climb"))
			for _, c := range []struct{ in, want string }{
				{"dir/file", "dir/file"},
				{e.root + "/dir/file", "dir/file"},
				{"./dir/../dir/file", "dir/file"},
				{"in", "dir/file"},
				{"dirlink/file", "dir/file"},
				{"dir/back", "dir/file"},
				{"absin/file", "dir/file"},
				{e.root + "/dirlink/new", "dir/new"},
				{"missing/x", "missing/x"},
				{".", ""},
				{e.root, ""},
			} {
				got, err := e.d.Resolve(c.in)
				if err != nil || got != c.want {
					t.Errorf("Resolve(%q) = %q, %v; want %q", c.in, got, err, c.want)
				}
			}
			for _, p := range []string{
				"../x", "dir/../../x", "/etc/passwd", e.root + "x/y", "", "a\x00b",
				"up", "etc", "etc/passwd", "dir/climb", "dir/climb/etc",
			} {
				if got, err := e.d.Resolve(p); !errors.Is(err, overlay.ErrOutside) {
					t.Errorf("Resolve(%q) = %q, %v; want ErrOutside", p, got, err)
				}
			}
		},
	},
	{
		name: "chmod",
		tree: map[string]string{"f": "f", "d/x": "x", "l": "->f"},
		run: func(t *testing.T, e *viewEnv) {
			must(t, e.v.Chmod("l", 0o600)) // follows the link
			fi, err := e.v.Lstat("f")
			must(t, err)
			if fi.Mode() != 0o600 {
				t.Fatalf("f after chmod through a link: %v", fi.Mode())
			}
			must(t, e.v.Chmod("d", 0o700))
			fi, err = e.v.Lstat("d")
			must(t, err)
			if fi.Mode() != fs.ModeDir|0o700 {
				t.Fatalf("d after chmod: %v", fi.Mode())
			}
			wantNames(t, e, "d", "x") // a directory's own metadata hides nothing
			wantErrno(t, "chmod a missing file", e.v.Chmod("nope", 0o600), syscall.ENOENT)
		},
	},
	{
		name: "mkdir and rmdir",
		tree: map[string]string{"d/": "", "f": "f"},
		run: func(t *testing.T, e *viewEnv) {
			wantErrno(t, "mkdir over a directory", e.v.Mkdir("d", 0o755), syscall.EEXIST)
			wantErrno(t, "mkdir over a file", e.v.Mkdir("f", 0o755), syscall.EEXIST)
			wantErrno(t, "mkdir in a missing directory", e.v.Mkdir("x/y", 0o755), syscall.ENOENT)
			wantErrno(t, "mkdir below a file", e.v.Mkdir("f/y", 0o755), syscall.ENOTDIR)
			wantErrno(t, "mkdirall below a file", e.v.MkdirAll("f/y/z", 0o755), syscall.ENOTDIR)
			must(t, e.v.MkdirAll("a/b/c", 0o750))
			fi, err := e.v.Lstat("a/b")
			must(t, err)
			if fi.Mode() != fs.ModeDir|0o750 {
				t.Fatalf("mkdirall mode %v", fi.Mode())
			}
			wantErrno(t, "rmdir a file", e.v.Rmdir("f"), syscall.ENOTDIR)
			wantErrno(t, "unlink a directory", e.v.Unlink("d"), syscall.EISDIR)
			wantErrno(t, "rmdir a non-empty directory", e.v.Rmdir("a"), syscall.ENOTEMPTY)
			wantErrno(t, "remove the root", e.v.Remove(""), syscall.EBUSY)
			must(t, e.v.Rmdir("a/b/c"))
			must(t, e.v.Rmdir("d"))
			must(t, e.v.Unlink("f"))
			must(t, e.v.RemoveAll("a"))
			must(t, e.v.RemoveAll("a")) // gone already: no error
			wantNames(t, e, "")
		},
	},
}

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
	e := &viewEnv{t: t, v: v}
	ino := inoOf(t, e, "d/a.txt")
	if ino == 0 || ino == inoOf(t, e, "d/b.txt") {
		t.Fatalf("made-up inode numbers %d and %d", ino, inoOf(t, e, "d/b.txt"))
	}
	mustWrite(t, v, "d/a.txt", "a, edited")
	must(t, v.Rename("d/a.txt", "d/c.txt"))
	if got := inoOf(t, e, "d/c.txt"); got != ino {
		t.Fatalf("inode %d after copy-up and rename, want %d", got, ino)
	}
	wantContent(t, e, "d/c.txt", "a, edited")
	wantNames(t, e, "d", "b.txt", "c.txt")
	must(t, v.RemoveAll("d"))
	wantNames(t, e, "")
	if b, err := afero.ReadFile(disk, "/d/a.txt"); err != nil || string(b) != "a" {
		t.Fatalf("the disk layer changed: %q, %v", b, err)
	}
	if _, err := v.Lstat("d"); overlay.Errno(err) != syscall.ENOENT {
		t.Fatalf("lstat of a removed directory: %v", err)
	}
}
