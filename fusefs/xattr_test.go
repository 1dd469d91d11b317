//go:build linux

package fusefs

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestXattrs(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"f": "text"}})
	if err := unix.Setxattr(filepath.Join(m.root, "f"), "user.disk", []byte("from disk"), 0); err != nil {
		t.Skipf("the disk keeps no user xattrs: %v", err)
	}
	p := filepath.Join(m.mnt, "f")
	buf := make([]byte, 64)
	if n, err := unix.Getxattr(p, "user.disk", buf); err != nil || string(buf[:n]) != "from disk" {
		t.Errorf("disk xattr through the mount: %q, %v", buf[:n], err)
	}
	if err := unix.Setxattr(p, "user.mine", []byte("agent"), unix.XATTR_CREATE); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(p, "user.mine", []byte("again"), unix.XATTR_CREATE); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("XATTR_CREATE over an existing one: %v", err)
	}
	n, err := unix.Listxattr(p, buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(strings.TrimSuffix(string(buf[:n]), "\x00"), "\x00"); !slices.Equal(got, []string{"user.disk", "user.mine"}) {
		t.Errorf("listxattr: %q", got)
	}
	if _, err := unix.Getxattr(filepath.Join(m.root, "f"), "user.mine", buf); !errors.Is(err, unix.ENODATA) {
		t.Errorf("the disk got the draft's xattr: %v", err)
	}
	if err := unix.Removexattr(p, "user.disk"); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Getxattr(p, "user.disk", buf); !errors.Is(err, unix.ENODATA) {
		t.Errorf("removed xattr: %v", err)
	}
	if err := unix.Setxattr(p, "trusted.x", []byte("x"), 0); err == nil {
		t.Errorf("a trusted.* xattr was accepted")
	}
}
