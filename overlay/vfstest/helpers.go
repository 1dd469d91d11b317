//go:build linux

package vfstest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/buffers"
	"github.com/draftfs/draftfs/overlay"
)

// WriteTree creates tree below dir: a key ending in "/" is a directory,
// a value starting with "->" a symlink to the rest, anything else a file
// with that content. Parents are made as needed.
func WriteTree(t testing.TB, dir string, tree map[string]string) {
	t.Helper()
	for k, v := range tree {
		p := filepath.Join(dir, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasSuffix(k, "/"):
			err = os.MkdirAll(p, 0o755)
		case strings.HasPrefix(v, "->"):
			err = os.Symlink(v[2:], p)
		default:
			err = os.WriteFile(p, []byte(v), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// DiskSnapshot describes a directory tree byte for byte: each path's
// type, permissions, size, content or symlink target and mtime.
func DiskSnapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	return Describe(t, dir, func(p string, fi fs.FileInfo) (string, error) {
		c, err := Content(p, fi)
		return fi.Mode().String() + " " + fi.ModTime().UTC().String() + c, err
	})
}

// Describe walks the tree at dir and gives each path in it (relative,
// "." for dir itself) what desc says of it; "" leaves the path out.
func Describe(t testing.TB, dir string, desc func(p string, fi fs.FileInfo) (string, error)) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := de.Info()
		if err != nil {
			return err
		}
		d, err := desc(p, fi)
		if err != nil || d == "" {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		snap[filepath.ToSlash(rel)] = d
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// Content is what a snapshot shows of the file at p: " " and its
// content, " -> " and a symlink's target, nothing for other types.
func Content(p string, fi fs.FileInfo) (string, error) {
	switch {
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(p)
		return " " + string(b), err
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		return " -> " + target, err
	}
	return "", nil
}

// CheckSnapshot fails when the tree at dir differs from want.
func CheckSnapshot(t testing.TB, dir string, want map[string]string) {
	t.Helper()
	got := DiskSnapshot(t, dir)
	for k, w := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("disk: %s is gone (was %q)", k, w)
		} else if g != w {
			t.Errorf("disk: %s changed: %q, was %q", k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("disk: %s appeared: %q", k, g)
		}
	}
}

// Must fails the test on an error.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ErrnoOf is the errno an error stands for: 0 for nil. The view's
// errors and the os package's go through the same mapping, so an error
// that wraps no errno compares by its io/fs class.
func ErrnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	return overlay.Errno(err)
}

// WantErrno fails unless err stands for want (0: no error) and says
// which path it is about.
func WantErrno(t testing.TB, what string, err error, want syscall.Errno) {
	t.Helper()
	if got := ErrnoOf(err); got != want {
		t.Fatalf("%s: got %v (errno %d %v), want errno %d %v", what, err, got, got, want, want)
	}
	if err != nil {
		var pe *fs.PathError
		var le *os.LinkError
		if !errors.As(err, &pe) && !errors.As(err, &le) && !errors.Is(err, overlay.ErrOutside) {
			t.Fatalf("%s: %v is not a *fs.PathError", what, err)
		}
	}
}

// ReadAll reads a whole file of an afero.Fs.
func ReadAll(fsys afero.Fs, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// MustRead is the content of a file of fsys.
func MustRead(t testing.TB, fsys afero.Fs, name string) string {
	t.Helper()
	b, err := ReadAll(fsys, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

// MustWrite writes a file of fsys.
func MustWrite(t testing.TB, fsys afero.Fs, name, content string) {
	t.Helper()
	if err := afero.WriteFile(fsys, name, []byte(content), 0o644); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
}

// InoOf is the inode number of name in fsys.
func InoOf(t testing.TB, fsys FS, name string) uint64 {
	t.Helper()
	fi, err := fsys.Lstat(name)
	Must(t, err)
	return Ino(t, fi)
}

// WantNames fails unless dir of fsys lists exactly want, in order.
func WantNames(t testing.TB, fsys FS, dir string, want ...string) {
	t.Helper()
	Must(t, namesAre(fsys, dir, want...))
}

func namesAre(fsys FS, dir string, want ...string) error {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return err
	}
	var got []string
	for _, de := range ents {
		got = append(got, de.Name())
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("ReadDir(%q) = %q, want %q", dir, got, want)
	}
	return nil
}

// WantContent fails unless name of fsys holds want, and says its size.
func WantContent(t testing.TB, fsys FS, name, want string) {
	t.Helper()
	Must(t, contentIs(fsys, name, want))
}

func contentIs(fsys FS, name, want string) error {
	b, err := ReadAll(fsys, name)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if string(b) != want {
		return fmt.Errorf("%s holds %q, want %q", name, b, want)
	}
	fi, err := fsys.Stat(name)
	if err != nil {
		return err
	}
	if fi.Size() != int64(len(want)) {
		return fmt.Errorf("%s: size %d, want %d", name, fi.Size(), len(want))
	}
	return nil
}

// WantMissing fails unless name of fsys is missing.
func WantMissing(t testing.TB, fsys FS, name string) {
	t.Helper()
	_, err := fsys.Lstat(name)
	WantErrno(t, "lstat "+name, err, syscall.ENOENT)
}

func missing(fsys FS, name string) error {
	if _, err := fsys.Lstat(name); ErrnoOf(err) != syscall.ENOENT {
		return fmt.Errorf("lstat %s: %v, want ENOENT", name, err)
	}
	return nil
}

// seeDisk fails unless check passes after a change made on disk: at
// once on a view that reads the disk, within its lag on a Lagging one.
func seeDisk(t *testing.T, e Env, check func() error) {
	t.Helper()
	var deadline time.Time
	if l, ok := e.(Lagging); ok {
		deadline = time.Now().Add(l.DiskLag())
	}
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// editor is the Env's editor buffers, and did, which fails the test on
// an error of a change to them and waits until the view shows it.
func editor(t *testing.T, e Env) (*buffers.Set, func(error)) {
	t.Helper()
	b := need[Buffered](t, e, "this view has no editor buffers")
	return b.Buffers(), func(err error) {
		t.Helper()
		Must(t, err)
		if !b.Settle() {
			t.Fatal("the view did not show a buffer change within a minute")
		}
	}
}

// need is the Env as the capability C; without it, the test is skipped
// saying why.
func need[C any](t *testing.T, e Env, why string) C {
	t.Helper()
	c, ok := e.(C)
	if !ok {
		t.Skip(why)
	}
	return c
}
