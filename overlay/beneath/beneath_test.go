//go:build linux

package beneath

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Both resolvers, openat2 and the O_NOFOLLOW walk, refuse every way out.
func TestRootRefusesWaysOut(t *testing.T) {
	for _, walkOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "openat2", true: "walk"}[walkOnly], func(t *testing.T) {
			if walkOnly {
				noOpenat2.Store(true)
				t.Cleanup(func() { noOpenat2.Store(false) })
			}
			top := t.TempDir()
			out := filepath.Join(top, "out")
			ws := filepath.Join(top, "ws")
			for _, d := range []string{out, filepath.Join(ws, "dir")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			os.WriteFile(filepath.Join(out, "secret"), []byte("s"), 0o644)
			os.WriteFile(filepath.Join(ws, "dir", "f"), []byte("f"), 0o644)
			os.Symlink(out, filepath.Join(ws, "abs"))
			os.Symlink("../out", filepath.Join(ws, "rel"))
			os.Symlink("dir", filepath.Join(ws, "inside"))
			r, err := OpenRoot(ws)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for _, k := range []string{"abs/secret", "rel/secret", "inside/f", "abs"} {
				if f, err := r.Open(k, os.O_RDONLY, 0); err == nil {
					f.Close()
					t.Errorf("open %s: no error", k)
				}
			}
			for _, k := range []string{"abs/x", "inside/x"} {
				if _, err := r.Open(k, os.O_CREATE|os.O_WRONLY, 0o644); !errors.Is(err, syscall.ELOOP) && !errors.Is(err, syscall.EXDEV) {
					t.Errorf("create %s: %v, want ELOOP", k, err)
				}
			}
			if fi, err := r.Lstat("abs"); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("lstat of a final symlink: %v %v", fi, err)
			}
			if err := r.Chmod("abs", 0o700); !errors.Is(err, syscall.ELOOP) {
				t.Errorf("chmod of a symlink: %v, want ELOOP", err)
			}
			if err := r.RemoveAll("abs"); err != nil {
				t.Errorf("removeall of a symlink: %v", err)
			}
			if _, err := os.Stat(filepath.Join(out, "secret")); err != nil {
				t.Errorf("removeall of a symlink removed its target's content: %v", err)
			}
			if b, err := os.ReadFile(filepath.Join(ws, "dir", "f")); err != nil || string(b) != "f" {
				t.Errorf("dir/f: %q %v", b, err)
			}
			if err := r.MkdirAll("a/b/c", 0o755); err != nil {
				t.Errorf("mkdirall: %v", err)
			}
			if err := r.MkdirAll("rel/b", 0o755); !errors.Is(err, syscall.ELOOP) && !errors.Is(err, syscall.ENOTDIR) {
				t.Errorf("mkdirall through a symlink: %v", err)
			}
		})
	}
}

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		p, dir string
		want   bool
	}{
		{"/a/b", "/a", true}, {"/a", "/a", true}, {"/ab", "/a", false},
		{"/x", "/", true}, {"a/b", "", true}, {"a", "a/b", false},
	} {
		if got := Within(c.p, c.dir); got != c.want {
			t.Errorf("Within(%q, %q) = %v", c.p, c.dir, got)
		}
	}
}

// Mknod makes a FIFO with exactly the mode asked (the umask aside),
// and never through a symlink out of the root.
func TestMknod(t *testing.T) {
	top := t.TempDir()
	ws := filepath.Join(top, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Symlink(top, filepath.Join(ws, "out"))
	r, err := OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	if err := r.Mknod("fifo", os.ModeNamedPipe|0o664, 0); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(ws, "fifo")); err != nil || fi.Mode() != os.ModeNamedPipe|0o664 {
		t.Errorf("mknod: %v, %v", fi, err)
	}
	if err := r.Mknod("out/fifo", os.ModeNamedPipe|0o644, 0); err == nil {
		t.Errorf("mknod through a symlink out of the root: no error")
	}
	if _, err := os.Lstat(filepath.Join(top, "fifo")); err == nil {
		t.Errorf("mknod through a symlink made a FIFO outside")
	}
}

// A Dir works by name in its directory and refuses every way out: a
// name of more than one element, "..", a symlink (itself or to a
// directory opened as one).
func TestDirRefusesWaysOut(t *testing.T) {
	top := t.TempDir()
	ws := filepath.Join(top, "ws")
	for _, d := range []string{filepath.Join(top, "out"), filepath.Join(ws, "dir", "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(top, "out", "secret"), []byte("s"), 0o644)
	os.Symlink("../../out/secret", filepath.Join(ws, "dir", "link"))
	os.Symlink("../out", filepath.Join(ws, "outdir"))
	r, err := OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.OpenDir("outdir"); !errors.Is(err, syscall.ELOOP) && !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("opendir of a symlink: %v, want ELOOP", err)
	}
	d, err := r.OpenDir("dir")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// An absolute name of a file of the test's own (were the check
	// broken, only that file is at stake).
	for _, name := range []string{"..", ".", "", "sub/x", "../ws/dir/x", filepath.Join(top, "out", "secret")} {
		if f, err := d.Open(name, os.O_CREATE|os.O_WRONLY, 0o644); !errors.Is(err, syscall.EXDEV) {
			if err == nil {
				f.Close()
			}
			t.Errorf("open %q: %v, want EXDEV", name, err)
		}
		if err := d.Rename("x", name); !errors.Is(err, syscall.EXDEV) {
			t.Errorf("rename to %q: %v, want EXDEV", name, err)
		}
		if err := d.Remove(name); !errors.Is(err, syscall.EXDEV) {
			t.Errorf("remove %q: %v, want EXDEV", name, err)
		}
	}
	if f, err := d.Open("link", os.O_WRONLY|os.O_TRUNC, 0); !errors.Is(err, syscall.ELOOP) {
		if err == nil {
			f.Close()
		}
		t.Errorf("open of a symlink: %v, want ELOOP", err)
	}
	if b, _ := os.ReadFile(filepath.Join(top, "out", "secret")); string(b) != "s" {
		t.Errorf("the file outside changed: %q", b)
	}
	f, err := d.Open(".new.tmp", os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("new"))
	f.Close()
	if err := d.Rename(".new.tmp", "new"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "dir", "new")); err != nil || string(b) != "new" {
		t.Errorf("dir/new: %q %v", b, err)
	}
	if err := d.Remove("new"); err != nil {
		t.Error(err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "dir", "new")); !os.IsNotExist(err) {
		t.Errorf("dir/new after remove: %v", err)
	}
}
