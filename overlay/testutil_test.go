//go:build linux

package overlay_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/draftfs/draftfs/buffers"
	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/vfstest"
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

// attrOf is the view's own metadata of an info.
func attrOf(t testing.TB, fi fs.FileInfo) *overlay.Attr {
	t.Helper()
	a, ok := fi.Sys().(*overlay.Attr)
	if !ok {
		t.Fatalf("%s: Sys() is %T, not *overlay.Attr", fi.Name(), fi.Sys())
	}
	return a
}

// The suite's helpers serve the engine's other tests too.
var (
	writeTree     = vfstest.WriteTree
	diskSnapshot  = vfstest.DiskSnapshot
	checkSnapshot = vfstest.CheckSnapshot
	errnoOf       = vfstest.ErrnoOf
	wantErrno     = vfstest.WantErrno
	readAll       = vfstest.ReadAll
	mustRead      = vfstest.MustRead
	mustWrite     = vfstest.MustWrite
	must          = vfstest.Must
)
