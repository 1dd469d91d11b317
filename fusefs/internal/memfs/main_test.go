package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/daemon/mounts"
	"github.com/draftfs/draftfs/fusefs/internal/uring"
)

// The floor must do what the write lines ask of it, or it measures
// failures: tar (create, write, chmod, utimes, mkdir, symlink), rsync
// (a temp name renamed over), pip (fsync), cp -a (ACLs), rm -rf.
func TestMemfsServesWriteLines(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
	for _, ring := range []bool{false, true} {
		if ring && !uring.Enabled() {
			t.Log("FUSE over io_uring is off: /dev/fuse only")
			continue
		}
		t.Run(fmt.Sprintf("io_uring=%v", ring), func(t *testing.T) { testWriteLines(t, ring) })
	}
}

func testWriteLines(t *testing.T, ring bool) {
	dir := t.TempDir()
	serve, err := mount(dir, false, ring)
	if err != nil {
		t.Skipf("cannot mount: %v", err)
	}
	defer func() {
		if err := mounts.UnmountFUSE(dir); err != nil {
			t.Error(err)
		}
		serve()
	}()
	p := func(s string) string { return filepath.Join(dir, s) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(p("a/b"), 0o755))
	must(os.WriteFile(p("a/b/.f.tmp"), []byte("hello, world\n"), 0o600))
	must(os.Chmod(p("a/b/.f.tmp"), 0o640))
	f, err := os.OpenFile(p("a/b/.f.tmp"), os.O_WRONLY, 0)
	must(err)
	must(f.Sync())
	must(f.Close())
	must(os.Rename(p("a/b/.f.tmp"), p("a/b/f")))
	must(os.Truncate(p("a/b/f"), 5))
	must(os.Symlink("b/f", p("a/l")))
	got, err := os.ReadFile(p("a/l"))
	must(err)
	if string(got) != "hello" {
		t.Errorf("a/l reads %q, want %q", got, "hello")
	}
	fi, err := os.Stat(p("a/b/f"))
	must(err)
	if fi.Mode() != 0o640 || fi.Size() != 5 {
		t.Errorf("a/b/f: %v, %d bytes; want -rw-r-----, 5", fi.Mode(), fi.Size())
	}
	must(unix.Setxattr(p("a/b/f"), "user.k", []byte("v"), 0))
	buf := make([]byte, 8)
	if n, err := unix.Getxattr(p("a/b/f"), "user.k", buf); err != nil || string(buf[:n]) != "v" {
		t.Errorf("user.k of a/b/f: %q %v, want v", buf[:n], err)
	}
	if err := os.Remove(p("a")); err == nil {
		t.Error("rmdir of a directory with files in it succeeded")
	}
	ents, err := os.ReadDir(p("a"))
	must(err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"b", "l"}) {
		t.Errorf("a lists %q, want [b l]", names)
	}
	must(os.RemoveAll(p("a")))
	if _, err := os.Lstat(p("a")); !os.IsNotExist(err) {
		t.Errorf("a after rm -rf: %v", err)
	}
}
