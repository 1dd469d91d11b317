//go:build linux

package fusefs

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSpecialFiles: FIFOs, Unix sockets and device nodes made through
// the mount work as on a local disk (the kernel serves their I/O), and
// the engine sees the same objects.
func TestSpecialFiles(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"d/": ""}})
	fifo := filepath.Join(m.mnt, "d", "fifo")
	if err := unix.Mkfifo(fifo, 0o640); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Errorf("open the FIFO for writing: %v", err)
			return
		}
		f.Write([]byte("through the pipe"))
		f.Close()
	}()
	f, err := os.Open(fifo)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(f)
	f.Close()
	if err != nil || string(got) != "through the pipe" {
		t.Errorf("read from the FIFO: %q, %v", got, err)
	}

	sock := filepath.Join(m.mnt, "d", "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("bind a Unix socket in the mount: %v", err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Write([]byte("hello"))
			c.Close()
		}
	}()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("connect to the socket: %v", err)
	}
	got, _ = io.ReadAll(c)
	c.Close()
	if string(got) != "hello" {
		t.Errorf("through the socket: %q", got)
	}

	chr := filepath.Join(m.mnt, "d", "chr")
	if err := unix.Mknod(chr, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil {
		if os.Geteuid() == 0 {
			t.Fatalf("mknod a character device as root: %v", err)
		}
		if err != syscall.EPERM {
			t.Errorf("mknod a character device without privilege: %v, want EPERM", err)
		}
	} else if st := lstat(t, chr); st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != unix.Mkdev(1, 3) {
		t.Errorf("character device: mode %o rdev %#x", st.Mode, st.Rdev)
	}

	if err := os.Chmod(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(fifo, filepath.Join(m.mnt, "fifo2")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(m.mnt, "fifo2"), filepath.Join(m.mnt, "fifo3")); err != nil {
		t.Fatal(err)
	}
	if st := lstat(t, filepath.Join(m.mnt, "fifo3")); st.Mode != unix.S_IFIFO|0o600 || st.Nlink != 2 || st.Ino != ino(t, fifo) {
		t.Errorf("FIFO linked and renamed: mode %o, %d links", st.Mode, st.Nlink)
	}
	// The engine sees what the mount made.
	v := m.d.Fs("test")
	for name, typ := range map[string]os.FileMode{"d/fifo": os.ModeNamedPipe, "d/sock": os.ModeSocket, "fifo3": os.ModeNamedPipe} {
		fi, err := v.Lstat(name)
		if err != nil || fi.Mode().Type() != typ {
			t.Errorf("engine: %s is %v (%v), want %v", name, fi, err, typ)
		}
	}
	if err := os.Remove(fifo); err != nil {
		t.Fatal(err)
	}
	if st := lstat(t, filepath.Join(m.mnt, "fifo3")); st.Nlink != 1 {
		t.Errorf("after unlinking the other name: %d links", st.Nlink)
	}
}

// TestCtimeThroughMount: the ctime the mount shows moves on every
// change of an inode, as a local disk's does, and on nothing else.
func TestCtimeThroughMount(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"lower": "abc"}})
	dir := filepath.Join(m.mnt, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "p")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	lower := filepath.Join(m.mnt, "lower")
	// Past a tick of the kernel's coarse clock, so a change shows.
	tick := func() { time.Sleep(20 * time.Millisecond) }
	ctime := func(p string) syscall.Timespec { t.Helper(); return lstat(t, p).Ctim }
	moves := func(what, p string, op func() error) {
		t.Helper()
		before := ctime(p)
		tick()
		if err := op(); err != nil {
			t.Fatalf("%s %s: %v", what, p, err)
		}
		if after := ctime(p); after.Nano() <= before.Nano() {
			t.Errorf("%s left the ctime of %s at %v", what, p, after)
		}
	}
	for _, p := range []string{f, fifo, dir, lower} {
		// tar and cp -a set what a file has: the ctime moves all the same.
		mode := lstat(t, p).Mode & 0o7777
		moves("chmod to the same mode", p, func() error { return unix.Fchmodat(unix.AT_FDCWD, p, mode, 0) })
		moves("chown to the same owner", p, func() error { return os.Lchown(p, os.Getuid(), os.Getgid()) })
		moves("chmod", p, func() error { return os.Chmod(p, 0o700) })
		moves("chown", p, func() error { return os.Chown(p, os.Getuid(), 4321) })
		moves("utimes", p, func() error { return os.Chtimes(p, time.Unix(1e9, 0), time.Unix(1e9, 0)) })
		before := ctime(p)
		tick()
		lstat(t, p)
		if after := ctime(p); after != before {
			t.Errorf("stat moved the ctime of %s", p)
		}
	}
	moves("link", f, func() error { return os.Link(f, f+"2") })
	moves("unlink of another name", f, func() error { return os.Remove(f + "2") })
	moves("truncate", f, func() error { return os.Truncate(f, 1) })
	moves("setxattr", f, func() error { return unix.Setxattr(f, "user.k", []byte("v"), 0) })
	moves("write", f, func() error {
		h, err := os.OpenFile(f, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		defer h.Close()
		_, err = h.Write([]byte("more"))
		return err
	})
	moves("link", fifo, func() error { return os.Link(fifo, fifo+"2") })
	moves("unlink of another name", fifo, func() error { return os.Remove(fifo + "2") })
	before := ctime(f)
	tick()
	if err := os.Rename(f, f+"3"); err != nil {
		t.Fatal(err)
	}
	if after := ctime(f + "3"); after.Nano() <= before.Nano() {
		t.Errorf("rename left the ctime at %v", after)
	}
	// In this order: the unlink removes what mkfifo made.
	for _, step := range []struct {
		what string
		op   func() error
	}{
		{"create", func() error { return os.WriteFile(filepath.Join(dir, "new"), nil, 0o644) }},
		{"mkfifo", func() error { return unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644) }},
		{"unlink", func() error { return os.Remove(filepath.Join(dir, "fifo")) }},
		{"rename", func() error { return os.Rename(f+"3", filepath.Join(m.mnt, "out")) }},
	} {
		what, op := step.what, step.op
		before := lstat(t, dir)
		tick()
		if err := op(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		after := lstat(t, dir)
		if after.Mtim.Nano() <= before.Mtim.Nano() || after.Ctim.Nano() <= before.Ctim.Nano() {
			t.Errorf("%s in a directory left its mtime at %v, ctime at %v", what, after.Mtim, after.Ctim)
		}
	}
}
