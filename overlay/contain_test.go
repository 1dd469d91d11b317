//go:build linux

package overlay_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/overlay"
)

// outsideDir is a directory outside the workspace that a symlink in it
// may lead to, holding tree; the test fails if it changes.
func outsideDir(t *testing.T, tree map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "elsewhere")
	must(t, os.Mkdir(dir, 0o755))
	writeTree(t, dir, tree)
	snap := diskSnapshot(t, dir)
	t.Cleanup(func() { checkSnapshot(t, dir, snap) })
	return dir
}

// Draft a replaces directory sub by a symlink to a directory outside,
// draft b writes sub/payload.sh: committing a then b must not write
// through the link that a's commit put on disk, even with --force.
func TestCommitTwoDraftChainStaysInside(t *testing.T) {
	e := newViewEnv(t, map[string]string{"sub/keep": "k\n"})
	out := outsideDir(t, map[string]string{"old": "o\n"})
	a := e.v
	b, err := e.ws.Draft("b")
	must(t, err)
	bv := b.Fs(overlay.SourceMCP)

	must(t, a.RemoveAll("sub"))
	must(t, a.SymlinkIfPossible(out, "sub"))
	mustWrite(t, bv, "sub/payload.sh", "#!/bin/sh\nevil\n")

	if _, err := e.d.Commit(overlay.CommitOptions{}); err != nil {
		t.Fatalf("commit a: %v", err)
	}
	if target, err := os.Readlink(e.disk("sub")); err != nil || target != out {
		t.Fatalf("after commit a, sub is not the symlink: %q %v", target, err)
	}
	for _, force := range []bool{false, true} {
		res, err := b.Commit(overlay.CommitOptions{Force: force})
		if !errors.Is(err, overlay.ErrConflict) {
			t.Fatalf("commit b (force %v): %v, want ErrConflict", force, err)
		}
		if len(res.Conflicts) != 1 || res.Conflicts[0].Path != "sub/payload.sh" {
			t.Fatalf("commit b (force %v): conflicts %+v, want sub/payload.sh", force, res.Conflicts)
		}
	}
	if _, err := os.Lstat(filepath.Join(out, "payload.sh")); !os.IsNotExist(err) {
		t.Fatalf("payload.sh written outside the workspace: %v", err)
	}
}

// The user replaces sub by a symlink on disk between the agent's write
// and the commit: the commit is refused and writes nothing outside.
func TestCommitRefusesParentSwappedForSymlink(t *testing.T) {
	e := newViewEnv(t, map[string]string{"sub/f": "f\n", "sub/gone": "g\n"})
	out := outsideDir(t, map[string]string{"f": "f\n", "gone": "g\n"})
	mustWrite(t, e.v, "sub/f", "draft\n")
	mustWrite(t, e.v, "sub/new", "new\n")
	must(t, e.v.Remove("sub/gone"))

	must(t, os.RemoveAll(e.disk("sub")))
	must(t, os.Symlink(out, e.disk("sub")))

	res, err := e.d.Commit(overlay.CommitOptions{DryRun: true})
	must(t, err)
	if len(res.Conflicts) != 3 {
		t.Fatalf("dry run: conflicts %+v, want sub/f, sub/gone and sub/new", res.Conflicts)
	}
	for _, force := range []bool{false, true} {
		if _, err := e.d.Commit(overlay.CommitOptions{Force: force}); !errors.Is(err, overlay.ErrConflict) {
			t.Fatalf("commit (force %v): %v, want ErrConflict", force, err)
		}
	}
}

// Undo after the user replaced a committed file's directory by a symlink
// to a directory holding the same names must neither delete nor restore
// through the link.
func TestUndoDoesNotFollowSwappedParent(t *testing.T) {
	e := newViewEnv(t, map[string]string{"sub/f": "old\n"})
	mustWrite(t, e.v, "sub/f", "new\n")
	mustWrite(t, e.v, "sub/added", "added\n")
	if _, err := e.d.Commit(overlay.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	// Outside holds exactly what the commit left, so a check that
	// follows the link sees nothing changed.
	out := outsideDir(t, map[string]string{"f": "new\n", "added": "added\n"})
	must(t, os.Rename(e.disk("sub"), e.disk("sub.moved")))
	must(t, os.Symlink(out, e.disk("sub")))

	if _, err := e.d.Undo(overlay.SourceCLI); !errors.Is(err, overlay.ErrDiskChanged) {
		t.Fatalf("undo: %v, want ErrDiskChanged", err)
	}
}

// The disk layer itself resolves beneath the workspace: a recovered or
// forced op that reaches a symlinked parent fails instead of following.
func TestDiskLayerRefusesSymlinkedParents(t *testing.T) {
	e := newViewEnv(t, map[string]string{"sub/": ""})
	out := outsideDir(t, map[string]string{"f": "f\n"})
	must(t, os.Remove(e.disk("sub")))
	must(t, os.Symlink(out, e.disk("sub")))
	disk := e.ws.Disk()
	for name, err := range map[string]error{
		"create":    afero.WriteFile(disk, "/sub/x", []byte("x"), 0o644),
		"remove":    disk.Remove("/sub/f"),
		"removeall": disk.RemoveAll("/sub/f"),
		"mkdirall":  disk.MkdirAll("/sub/d/e", 0o755),
		"rename":    disk.Rename("/sub/f", "/g"),
		"chmod":     disk.Chmod("/sub", 0o777),
	} {
		if err == nil {
			t.Errorf("%s through the symlinked parent succeeded", name)
		}
	}
	if _, err := afero.ReadFile(disk, "/sub/f"); err == nil {
		t.Errorf("read through the symlinked parent succeeded")
	}
}

// A path through a symlinked directory reads what the link leads to when
// that stays inside the workspace, and is refused when it leaves it.
func TestViewPathsThroughLinkedDirectories(t *testing.T) {
	out := outsideDir(t, map[string]string{"secret": "s\n"})
	e := newViewEnv(t, map[string]string{"sub/deep/y": "y\n", "sublink": "->sub", "abslink": "->" + "/"})
	must(t, os.Remove(e.disk("abslink")))
	must(t, os.Symlink(e.disk("sub"), e.disk("abslink")))
	must(t, os.Symlink(out, e.disk("outlink")))
	must(t, os.Symlink("../sublink/deep", e.disk("sub/back")))
	for _, p := range []string{"sublink/deep/y", "abslink/deep/y", "sub/back/y", "sublink/back/y"} {
		if got, err := readAll(e.v, p); err != nil || string(got) != "y\n" {
			t.Errorf("read %s: %q %v", p, got, err)
		}
		if _, err := e.v.Stat(p); err != nil {
			t.Errorf("stat %s: %v", p, err)
		}
	}
	if got, err := readAll(e.v, "outlink/secret"); err == nil {
		t.Errorf("read outlink/secret: %q, want a refusal", got)
	}
	if _, err := e.v.Stat("outlink/secret"); err == nil {
		t.Errorf("stat outlink/secret: no error")
	}
}

// The same through symlinks the draft made: a symlink to a directory, and
// one whose target goes through it. MkdirAll of a path that leads to a
// file says so (ENOTDIR), as os.MkdirAll does; a lookup through a draft
// symlink used to fail with "not a directory".
func TestViewPathsThroughDraftLinks(t *testing.T) {
	e := newViewEnv(t, map[string]string{"d/x": "x\n"})
	must(t, afero.WriteFile(e.v, "d/g", []byte("g\n"), 0o644))
	must(t, e.v.Symlink("d", "g"))
	must(t, e.v.MkdirAll("b", 0o755))
	must(t, e.v.Symlink("../g/g", "b/f"))
	for _, p := range []string{"g/g", "g/x", "b/f"} {
		if _, err := e.v.Stat(p); err != nil {
			t.Errorf("stat %s: %v", p, err)
		}
	}
	if got, err := readAll(e.v, "b/f"); err != nil || string(got) != "g\n" {
		t.Errorf("read b/f: %q %v", got, err)
	}
	if err := e.v.MkdirAll("b/f", 0o755); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("mkdir -p b/f: %v, want ENOTDIR", err)
	}
	must(t, e.v.Symlink("../../outside", "d/up"))
	if _, err := e.v.Stat("g/up"); !errors.Is(err, overlay.ErrOutside) {
		t.Errorf("stat g/up: %v, want ErrOutside", err)
	}
}
