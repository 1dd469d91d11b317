//go:build linux

package vfstest

import (
	"io"
	"os"
	"syscall"
	"testing"
	"time"
)

// fileCases are about files: handles, content, times, buffers.
var fileCases = []Case{
	{
		Name: "unlink while open",
		Tree: map[string]string{"disk": "disk content", "edit": "0123456789"},
		Run: func(t *testing.T, e Env) {
			ro, err := e.FS().Open("disk")
			Must(t, err)
			defer ro.Close()
			rw, err := e.FS().OpenFile("edit", os.O_RDWR, 0)
			Must(t, err)
			defer rw.Close()
			Must(t, e.FS().Remove("disk"))
			Must(t, e.FS().Remove("edit"))
			WantMissing(t, e.FS(), "disk")
			WantMissing(t, e.FS(), "edit")
			b, err := io.ReadAll(ro)
			Must(t, err)
			if string(b) != "disk content" {
				t.Fatalf("read-only handle after unlink: %q", b)
			}
			_, err = rw.WriteAt([]byte("AB"), 2)
			Must(t, err)
			buf := make([]byte, 10)
			n, err := rw.ReadAt(buf, 0)
			if n != 10 || string(buf) != "01AB456789" {
				t.Fatalf("read-write handle after unlink: %q, %v", buf[:n], err)
			}
			fi, err := rw.Stat()
			Must(t, err)
			if fi.Size() != 10 || Nlink(t, fi) != 0 {
				t.Fatalf("unlinked handle: size %d nlink %d, want 10 and 0", fi.Size(), Nlink(t, fi))
			}
			WantNames(t, e.FS(), "")
		},
	},
	{
		Name: "read-only handle opened before another handle writes",
		Tree: map[string]string{"f": "old text"},
		Run: func(t *testing.T, e Env) {
			if pins(e) {
				t.Skip("a read-only handle keeps the file it opened here (Pinning)")
			}
			ro, err := e.FS().Open("f")
			Must(t, err)
			defer ro.Close()
			w, err := e.FS().OpenFile("f", os.O_WRONLY, 0)
			Must(t, err)
			_, err = w.WriteAt([]byte("NEW"), 0)
			Must(t, err)
			Must(t, w.Close())
			b, err := io.ReadAll(ro)
			Must(t, err)
			if string(b) != "NEW text" {
				t.Fatalf("a handle opened before the write reads %q, want the file's new content", b)
			}
		},
	},
	{
		Name: "O_APPEND",
		Tree: map[string]string{"log": "abc"},
		Run: func(t *testing.T, e Env) {
			f, err := e.FS().OpenFile("log", os.O_WRONLY|os.O_APPEND, 0)
			Must(t, err)
			_, err = f.Write([]byte("de"))
			Must(t, err)
			_, err = f.Seek(0, io.SeekStart)
			Must(t, err)
			_, err = f.Write([]byte("fg"))
			Must(t, err)
			Must(t, f.Close())
			WantContent(t, e.FS(), "log", "abcdefg")
			f, err = e.FS().OpenFile("new", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			Must(t, err)
			_, err = f.Write([]byte("x"))
			Must(t, err)
			Must(t, f.Close())
			WantContent(t, e.FS(), "new", "x")
		},
	},
	{
		Name: "truncate",
		Tree: map[string]string{"f": "0123456789", "g": "abc", "d/": ""},
		Run: func(t *testing.T, e Env) {
			Must(t, e.FS().Truncate("f", 4))
			WantContent(t, e.FS(), "f", "0123")
			Must(t, e.FS().Truncate("f", 6))
			WantContent(t, e.FS(), "f", "0123\x00\x00")
			Must(t, e.FS().Truncate("g", 0))
			WantContent(t, e.FS(), "g", "")
			WantErrno(t, "truncate a directory", e.FS().Truncate("d", 0), syscall.EISDIR)
			WantErrno(t, "truncate to a negative size", e.FS().Truncate("f", -1), syscall.EINVAL)
			WantErrno(t, "truncate a missing file", e.FS().Truncate("nope", 0), syscall.ENOENT)
			f, err := e.FS().OpenFile("f", os.O_RDWR|os.O_TRUNC, 0)
			Must(t, err)
			Must(t, f.Truncate(3))
			Must(t, f.Close())
			WantContent(t, e.FS(), "f", "\x00\x00\x00")
		},
	},
	{
		Name: "O_EXCL and O_CREATE",
		Tree: map[string]string{"f": "f", "d/": "", "l": "->missing"},
		Run: func(t *testing.T, e Env) {
			_, err := e.FS().OpenFile("f", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
			WantErrno(t, "O_EXCL over a file", err, syscall.EEXIST)
			_, err = e.FS().OpenFile("l", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
			WantErrno(t, "O_EXCL over a dangling symlink", err, syscall.EEXIST)
			_, err = e.FS().OpenFile("d", os.O_RDWR, 0)
			WantErrno(t, "open a directory for writing", err, syscall.EISDIR)
			_, err = e.FS().OpenFile("nope/f", os.O_RDWR|os.O_CREATE, 0o644)
			WantErrno(t, "create in a missing directory", err, syscall.ENOENT)
			_, err = e.FS().OpenFile("f/x", os.O_RDWR|os.O_CREATE, 0o644)
			WantErrno(t, "create below a file", err, syscall.ENOTDIR)
			_, err = e.FS().OpenFile("nope", os.O_RDONLY, 0)
			WantErrno(t, "open a missing file", err, syscall.ENOENT)
			f, err := e.FS().OpenFile("l", os.O_RDWR|os.O_CREATE, 0o600)
			Must(t, err) // creates the symlink's target
			Must(t, f.Close())
			fi, err := e.FS().Lstat("missing")
			Must(t, err)
			if fi.Mode() != 0o600 {
				t.Fatalf("created through a symlink: mode %v, want 0600", fi.Mode())
			}
		},
	},
	{
		Name: "mtime after write and after chtimes",
		Tree: map[string]string{"f": "f", "d/": ""},
		Run: func(t *testing.T, e Env) {
			old := time.Date(2001, 2, 3, 4, 5, 6, 7000, time.UTC)
			Must(t, e.FS().Chtimes("f", old, old))
			fi, err := e.FS().Stat("f")
			Must(t, err)
			if !fi.ModTime().Equal(old) {
				t.Fatalf("mtime after chtimes %v, want %v", fi.ModTime(), old)
			}
			f, err := e.FS().OpenFile("f", os.O_WRONLY|os.O_APPEND, 0)
			Must(t, err)
			_, err = f.Write([]byte("more"))
			Must(t, err)
			Must(t, f.Close())
			fi, err = e.FS().Stat("f")
			Must(t, err)
			if !fi.ModTime().After(old) {
				t.Fatalf("mtime after write %v, not after %v", fi.ModTime(), old)
			}
			Must(t, e.FS().Chtimes("d", old, old))
			fi, err = e.FS().Stat("d")
			Must(t, err)
			if !fi.ModTime().Equal(old) {
				t.Fatalf("directory mtime after chtimes %v, want %v", fi.ModTime(), old)
			}
			// Reopening keeps both.
			e.Reopen()
			fi, err = e.FS().Stat("d")
			Must(t, err)
			if !fi.ModTime().Equal(old) {
				t.Fatalf("directory mtime after reopen %v, want %v", fi.ModTime(), old)
			}
		},
	},
	{
		Name: "copy-up keeps mode, mtime and inode",
		Tree: map[string]string{"x.sh": "#!/bin/sh\n"},
		Run: func(t *testing.T, e Env) {
			Must(t, os.Chmod(e.Disk("x.sh"), 0o751))
			old := time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC)
			Must(t, os.Chtimes(e.Disk("x.sh"), old, old))
			before := diskIno(t, e.Disk("x.sh"))
			if got := InoOf(t, e.FS(), "x.sh"); got != before {
				t.Fatalf("lower inode %d, want the disk's %d", got, before)
			}
			Must(t, e.FS().Chmod("x.sh", 0o700)) // copies up without writing
			fi, err := e.FS().Lstat("x.sh")
			Must(t, err)
			if fi.Mode() != 0o700 || !fi.ModTime().Equal(old) || Ino(t, fi) != before {
				t.Fatalf("after chmod: mode %v mtime %v ino %d, want 0700, %v, %d", fi.Mode(), fi.ModTime(), Ino(t, fi), old, before)
			}
			WantContent(t, e.FS(), "x.sh", "#!/bin/sh\n")
			Must(t, e.FS().Rename("x.sh", "y.sh"))
			if got := InoOf(t, e.FS(), "y.sh"); got != before {
				t.Fatalf("inode after rename %d, want %d", got, before)
			}
			e.Reopen()
			if got := InoOf(t, e.FS(), "y.sh"); got != before {
				t.Fatalf("inode after reopen %d, want %d", got, before)
			}
		},
		DiskChanges: true,
	},
	{
		Name:        "a disk change shows through where the draft has no entry",
		Tree:        map[string]string{"f": "old", "d/a": "a", "e/": ""},
		DiskChanges: true,
		Run: func(t *testing.T, e Env) {
			MustWrite(t, e.FS(), "d/draft", "draft")
			WantContent(t, e.FS(), "f", "old")
			Must(t, os.WriteFile(e.Disk("f"), []byte("new on disk"), 0o644))
			seeDisk(t, e, func() error { return contentIs(e.FS(), "f", "new on disk") })
			Must(t, os.WriteFile(e.Disk("d/b"), []byte("b"), 0o644))
			seeDisk(t, e, func() error { return namesAre(e.FS(), "d", "a", "b", "draft") })
			Must(t, os.Remove(e.Disk("d/a")))
			seeDisk(t, e, func() error { return namesAre(e.FS(), "d", "b", "draft") })
			Must(t, os.Remove(e.Disk("e")))
			seeDisk(t, e, func() error { return missing(e.FS(), "e") })
			// Where the draft has an entry, the disk no longer shows.
			MustWrite(t, e.FS(), "f", "draft f")
			Must(t, os.WriteFile(e.Disk("f"), []byte("newer on disk"), 0o644))
			WantContent(t, e.FS(), "f", "draft f")
		},
	},
	{
		Name: "editor buffers shadow the disk; the draft shadows buffers",
		Tree: map[string]string{"f": "disk", "g": "disk g"},
		Run: func(t *testing.T, e Env) {
			bufs, did := editor(t, e)
			did(bufs.Open("f", 1, []byte("buffer text")))
			WantContent(t, e.FS(), "f", "buffer text")
			r, err := e.FS().Open("g")
			Must(t, err)
			defer r.Close()
			did(bufs.Open("g", 1, []byte("buffer g")))
			b, err := io.ReadAll(r)
			Must(t, err)
			if want := "buffer g"; string(b) != want && !(pins(e) && string(b) == "disk g") {
				t.Fatalf("a handle opened before the buffer reads %q, want %q", b, want)
			}
			// The first write copies up from the buffer.
			f, err := e.FS().OpenFile("f", os.O_WRONLY|os.O_APPEND, 0)
			Must(t, err)
			_, err = f.Write([]byte(" + agent"))
			Must(t, err)
			Must(t, f.Close())
			WantContent(t, e.FS(), "f", "buffer text + agent")
			did(bufs.Open("f", 2, []byte("the user typed more")))
			WantContent(t, e.FS(), "f", "buffer text + agent")
			did(bufs.Close("g"))
			WantContent(t, e.FS(), "g", "disk g")
			// A saved buffer (not dirty) shows the disk.
			did(bufs.Open("g", 3, []byte("saved")))
			did(bufs.Save("g"))
			WantContent(t, e.FS(), "g", "disk g")
		},
	},
	{
		Name: "new unsaved buffer files appear in listings",
		Tree: map[string]string{"d/a": "a"},
		Run: func(t *testing.T, e Env) {
			bufs, did := editor(t, e)
			did(bufs.Open("d/untitled.go", 1, []byte("package d\n")))
			did(bufs.Open("top.txt", 1, []byte("top")))
			WantNames(t, e.FS(), "d", "a", "untitled.go")
			WantNames(t, e.FS(), "", "d", "top.txt")
			WantContent(t, e.FS(), "d/untitled.go", "package d\n")
			fi, err := e.FS().Lstat("top.txt")
			Must(t, err)
			if !fi.Mode().IsRegular() {
				t.Fatalf("buffer-only file: mode %v", fi.Mode())
			}
			ents, err := e.FS().ReadDir("")
			Must(t, err)
			if ents[1].Type() != 0 {
				t.Fatalf("buffer-only file listed with type %v", ents[1].Type())
			}
			Must(t, e.FS().Rename("top.txt", "d/moved.txt"))
			WantContent(t, e.FS(), "d/moved.txt", "top")
			WantNames(t, e.FS(), "", "d")
			Must(t, e.FS().Remove("d/untitled.go"))
			WantNames(t, e.FS(), "d", "a", "moved.txt")
		},
	},
}
