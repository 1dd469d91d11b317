//go:build linux

package overlay_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/buffers"
	"github.com/draftfs/draftfs/overlay"
)

// viewEnv is a workspace on disk, its state directory and the merged
// view of its main draft, for the tests of the view.
type viewEnv struct {
	t     testing.TB
	root  string // the workspace on disk
	state string
	bufs  *buffers.Set
	ws    *overlay.Workspace
	d     *overlay.Draft
	v     *overlay.Fs
}

// newViewEnv makes a workspace holding tree (see writeTree) and opens
// its main draft's view.
func newViewEnv(t testing.TB, tree map[string]string) *viewEnv {
	t.Helper()
	e := &viewEnv{t: t, root: filepath.Join(t.TempDir(), "ws"), state: t.TempDir(), bufs: buffers.NewSet()}
	if err := os.Mkdir(e.root, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTree(t, e.root, tree)
	e.open()
	t.Cleanup(func() {
		if err := e.ws.Close(); err != nil {
			t.Errorf("close workspace: %v", err)
		}
	})
	return e
}

func (e *viewEnv) open() {
	e.t.Helper()
	ws, err := overlay.Open(overlay.Options{Root: e.root, StateDir: e.state, Buffers: e.bufs})
	if err != nil {
		e.t.Fatal(err)
	}
	d, err := ws.Draft("")
	if err != nil {
		e.t.Fatal(err)
	}
	e.ws, e.d, e.v = ws, d, d.Fs(overlay.SourceMount)
}

// reopen closes the workspace and opens it again from its state
// directory, as a restarted daemon does; the buffers stay.
func (e *viewEnv) reopen() {
	e.t.Helper()
	if err := e.ws.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.open()
}

// disk is the workspace's absolute path of key.
func (e *viewEnv) disk(key string) string { return filepath.Join(e.root, filepath.FromSlash(key)) }

// writeTree creates tree below dir: a key ending in "/" is a directory,
// a value starting with "->" a symlink to the rest, anything else a file
// with that content. Parents are made as needed.
func writeTree(t testing.TB, dir string, tree map[string]string) {
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

// errnoOf is the errno an error stands for: 0 for nil. Both the view's
// errors and the os package's go through the same mapping, so an error
// that wraps no errno compares by its io/fs class.
func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	return overlay.Errno(err)
}

// readAll reads a whole file of an afero.Fs.
func readAll(fsys afero.Fs, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func mustRead(t testing.TB, fsys afero.Fs, name string) string {
	t.Helper()
	b, err := readAll(fsys, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

func mustWrite(t testing.TB, fsys afero.Fs, name, content string) {
	t.Helper()
	if err := afero.WriteFile(fsys, name, []byte(content), 0o644); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErrno fails unless err stands for want (0: no error).
func wantErrno(t testing.TB, what string, err error, want syscall.Errno) {
	t.Helper()
	if got := errnoOf(err); got != want {
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

// attrOf is the view's own metadata of an info.
func attrOf(t testing.TB, fi fs.FileInfo) *overlay.Attr {
	t.Helper()
	a, ok := fi.Sys().(*overlay.Attr)
	if !ok {
		t.Fatalf("%s: Sys() is %T, not *overlay.Attr", fi.Name(), fi.Sys())
	}
	return a
}

// diskSnapshot describes a directory tree byte for byte: each path's
// type, permissions, size, content or symlink target and mtime.
func diskSnapshot(t testing.TB, dir string) map[string]string {
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
		rel, _ := filepath.Rel(dir, p)
		desc := fi.Mode().String() + " " + fi.ModTime().UTC().String()
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += " " + string(b)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		}
		snap[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// checkSnapshot fails when the tree at dir differs from want.
func checkSnapshot(t testing.TB, dir string, want map[string]string) {
	t.Helper()
	got := diskSnapshot(t, dir)
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
