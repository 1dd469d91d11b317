//go:build linux

package overlay_test

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/draftfs/draftfs/overlay"
)

// Another user of an --allow-other mount copies a program in and makes
// it set-uid and set-gid: the commit (by root here) refuses it, naming
// the path, unless asked with AllowSetid; status and diff show the mode.
func TestCommitRefusesSetidUnlessAsked(t *testing.T) {
	e := newViewEnv(t, map[string]string{"tool": "#!/bin/sh\n"})
	mustWrite(t, e.v, "prog", "#!/bin/sh\nid\n")
	must(t, e.v.Chmod("prog", 0o755|fs.ModeSetuid|fs.ModeSetgid))
	must(t, e.v.Chmod("tool", 0o755|fs.ModeSetuid))

	st, err := e.d.Status()
	must(t, err)
	got := map[string]overlay.StatusEntry{}
	for _, s := range st {
		got[s.Path] = s
	}
	if s := got["prog"]; s.NewMode != "106755" || s.OldMode != "" {
		t.Errorf("status of prog: %+v, want newMode 106755", s)
	}
	if s := got["tool"]; s.OldMode != "100644" || s.NewMode != "104755" {
		t.Errorf("status of tool: %+v, want oldMode 100644, newMode 104755", s)
	}
	diffs, err := e.d.Diff()
	must(t, err)
	patches := ""
	for _, fd := range diffs {
		patches += fd.Patch
	}
	for _, want := range []string{"new file mode 106755\n", "old mode 100644\nnew mode 104755\n"} {
		if !strings.Contains(patches, want) {
			t.Errorf("diff lacks %q:\n%s", want, patches)
		}
	}

	for _, force := range []bool{false, true} {
		res, err := e.d.Commit(overlay.CommitOptions{Force: force})
		if !errors.Is(err, overlay.ErrConflict) {
			t.Fatalf("commit (force %v): %v, want ErrConflict", force, err)
		}
		if len(res.Conflicts) != 2 || res.Conflicts[0].Path != "prog" || !strings.Contains(res.Conflicts[0].Reason, "--allow-setid") {
			t.Fatalf("commit (force %v): conflicts %+v, want prog and tool naming --allow-setid", force, res.Conflicts)
		}
	}
	if _, err := os.Lstat(e.disk("prog")); !os.IsNotExist(err) {
		t.Fatalf("refused commit wrote prog: %v", err)
	}
	if _, err := e.d.Commit(overlay.CommitOptions{AllowSetid: true}); err != nil {
		t.Fatalf("commit --allow-setid: %v", err)
	}
	for k, want := range map[string]fs.FileMode{"prog": 0o755 | fs.ModeSetuid | fs.ModeSetgid, "tool": 0o755 | fs.ModeSetuid} {
		if fi, err := os.Lstat(e.disk(k)); err != nil || fi.Mode() != want {
			t.Errorf("%s on disk after --allow-setid: %v %v, want %v", k, fi.Mode(), err, want)
		}
	}
}

// A sticky or set-gid bit new on a directory is asked for too; one the
// disk already has is not.
func TestCommitDirectorySpecialBits(t *testing.T) {
	e := newViewEnv(t, map[string]string{"shared/": "", "tmp/": ""})
	must(t, os.Chmod(e.disk("tmp"), 0o777|fs.ModeSticky))
	must(t, e.v.Chmod("shared", 0o775|fs.ModeSetgid))
	mustWrite(t, e.v, "tmp/f", "f\n")
	res, err := e.d.Commit(overlay.CommitOptions{})
	if !errors.Is(err, overlay.ErrConflict) || len(res.Conflicts) != 1 || res.Conflicts[0].Path != "shared" {
		t.Fatalf("commit: %v %+v, want a refusal for shared only", err, res)
	}
	if _, err := e.d.Commit(overlay.CommitOptions{Keys: []string{"tmp"}}); err != nil {
		t.Fatalf("commit of tmp (sticky on disk already): %v", err)
	}
}

// The owner the draft gives a path is committed only when asked; a file
// the commit replaces keeps the disk's owner (root commits here).
func TestCommitOwners(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to own files as another user")
	}
	e := newViewEnv(t, map[string]string{"theirs": "t\n", "mine": "m\n"})
	must(t, os.Chown(e.disk("theirs"), 65534, 65534))
	mustWrite(t, e.v, "theirs", "changed\n")
	mustWrite(t, e.v, "planted", "p\n")
	must(t, e.v.Chown("planted", 65534, 65534))
	must(t, e.v.Chown("mine", 65534, 65534))

	st, err := e.d.Status()
	must(t, err)
	owners := map[string]string{}
	for _, s := range st {
		owners[s.Path] = s.OldOwner + " -> " + s.NewOwner
	}
	want := map[string]string{"mine": "0:0 -> 65534:65534", "planted": "0:0 -> 65534:65534", "theirs": " -> "}
	for k, w := range want {
		if owners[k] != w {
			t.Errorf("status owner of %s: %q, want %q", k, owners[k], w)
		}
	}
	diffs, err := e.d.Diff("mine")
	must(t, err)
	if len(diffs) != 1 || !strings.Contains(diffs[0].Patch, "old owner 0:0\nnew owner 65534:65534\n") {
		t.Errorf("diff of mine: %+v", diffs)
	}

	res, err := e.d.Commit(overlay.CommitOptions{})
	if !errors.Is(err, overlay.ErrConflict) || len(res.Conflicts) != 2 {
		t.Fatalf("commit: %v %+v, want mine and planted refused", err, res)
	}
	if _, err := e.d.Commit(overlay.CommitOptions{Keys: []string{"theirs"}}); err != nil {
		t.Fatal(err)
	}
	ownerOf := func(k string) uint32 {
		fi, err := os.Lstat(e.disk(k))
		must(t, err)
		return fi.Sys().(*syscall.Stat_t).Uid
	}
	if u := ownerOf("theirs"); u != 65534 {
		t.Errorf("theirs owned by %d after commit, want the disk's 65534", u)
	}
	if _, err := e.d.Commit(overlay.CommitOptions{AllowOwner: true}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"mine", "planted"} {
		if u := ownerOf(k); u != 65534 {
			t.Errorf("%s owned by %d after --allow-owner, want 65534", k, u)
		}
	}
}

// Every change is logged with its source: a mount write, an MCP write,
// a mount write again of one file log three entries; consecutive writes
// by one source coalesce.
func TestLogEveryWriterOfAFile(t *testing.T) {
	e := newViewEnv(t, map[string]string{})
	mcp := e.d.Fs(overlay.SourceMCP)
	mustWrite(t, e.v, "f", "m1\n")
	mustWrite(t, mcp, "f", "m2\n")
	mustWrite(t, e.v, "f", "m3\n")
	mustWrite(t, e.v, "f", "m4\n")
	log, err := e.d.Log()
	must(t, err)
	var got []string
	for _, l := range log {
		got = append(got, string(l.Source)+" "+l.Op+" "+l.Path)
	}
	want := "mount create f,mcp write f,mount write f"
	if strings.Join(got, ",") != want {
		t.Fatalf("log: %v, want %s", got, want)
	}
}

// TestUndoRestoresOwners: undo gives back what a commit replaced or
// removed with its owners, not the committer's (root's).
func TestUndoRestoresOwners(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to own files as another user")
	}
	e := newViewEnv(t, map[string]string{"theirs": "t\n", "d/f": "f\n", "gone": "g\n"})
	must(t, os.Symlink("theirs", e.disk("link")))
	owners := map[string][2]int{"theirs": {65534, 1234}, "d": {4321, 4321}, "d/f": {65534, 65534}, "gone": {1234, 65534}, "link": {4321, 1234}}
	for k, o := range owners {
		must(t, os.Lchown(e.disk(k), o[0], o[1]))
	}
	mustWrite(t, e.v, "theirs", "changed\n")
	must(t, e.v.RemoveAll("d"))
	must(t, e.v.Remove("gone"))
	must(t, e.v.Remove("link"))
	mustWrite(t, e.v, "link", "a file over a symlink\n")
	// The new file is root's, over a symlink of 4321's: asked for.
	if _, err := e.d.Commit(overlay.CommitOptions{Source: overlay.SourceCLI, AllowOwner: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.d.Undo(overlay.SourceCLI); err != nil {
		t.Fatal(err)
	}
	for k, o := range owners {
		fi, err := os.Lstat(e.disk(k))
		if err != nil {
			t.Errorf("%s after undo: %v", k, err)
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != o[0] || int(st.Gid) != o[1] {
			t.Errorf("%s after undo owned by %d:%d, want %d:%d", k, st.Uid, st.Gid, o[0], o[1])
		}
	}
}

// A status, a diff and a commit's check ask the owner a new path would
// get once per directory: each path gets its own directory's answer (a
// set-gid directory's group, the committer's elsewhere).
func TestNewOwnerPerDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to own files as another user")
	}
	e := newViewEnv(t, map[string]string{"sg/keep": "k\n", "plain/keep": "k\n"})
	must(t, os.Chown(e.disk("sg"), 0, 65534))
	must(t, os.Chmod(e.disk("sg"), 0o775|fs.ModeSetgid))
	for _, k := range []string{"sg/a", "plain/b", "sg/c", "plain/d"} {
		mustWrite(t, e.v, k, "new\n")
		must(t, e.v.Chown(k, 65534, 65534))
	}
	want := map[string]string{"sg/a": "0:65534", "sg/c": "0:65534", "plain/b": "0:0", "plain/d": "0:0"}
	st, err := e.d.Status()
	must(t, err)
	for _, s := range st {
		if w, ok := want[s.Path]; ok && (s.OldOwner != w || s.NewOwner != "65534:65534") {
			t.Errorf("status owner of %s: %s -> %s, want %s -> 65534:65534", s.Path, s.OldOwner, s.NewOwner, w)
		}
	}
	diffs, err := e.d.Diff()
	must(t, err)
	for _, fd := range diffs {
		if w, ok := want[fd.Path]; ok && !strings.Contains(fd.Patch, "old owner "+w+"\n") {
			t.Errorf("diff of %s: %s, want old owner %s", fd.Path, fd.Patch, w)
		}
	}
}
