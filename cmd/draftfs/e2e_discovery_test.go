package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runAt runs draftfs in dir with the fixture's state root but without
// --workspace, so that the command finds its workspace itself.
func (f *fixture) runAt(dir string, args ...string) result {
	f.t.Helper()
	c := f.as(exec.Command(bin, append([]string{"--state", f.state}, args...)...))
	c.Dir = dir
	return f.finish(c, "")
}

// TestReadOnlyCommandsCreateNothing: status, diff, log and socket in a
// directory draftfs never served leave no state behind, and an unknown
// draft is an error naming the drafts there are.
func TestReadOnlyCommandsCreateNothing(t *testing.T) {
	f := newFixture(t)
	f.file("a.txt", "a\n")
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"diff"}, {"log"}, {"socket"}} {
		r := f.runAt(f.ws, args...)
		if r.code != 0 || (args[0] != "socket" && strings.TrimSpace(r.out) != "" && strings.TrimSpace(r.out) != "[]") {
			t.Errorf("draftfs %v in a fresh directory: %s", args, r)
		}
	}
	if _, err := os.Stat(f.state); !os.IsNotExist(err) {
		t.Fatalf("read-only commands created state: %v", err)
	}
	// A write command creates the state; a typo in --draft then does not
	// create a draft.
	f.ok("discard", "--all")
	r := f.run("--draft", "typo", "status")
	if r.code != 1 || !strings.Contains(r.err, `no draft "typo"`) || !strings.Contains(r.err, "main") {
		t.Errorf("status of an unknown draft: %s", r)
	}
	d := f.serve("")
	for _, args := range [][]string{{"--draft", "typo", "status"}, {"--draft", "typo", "log"}, {"--draft", "typo", "diff"}} {
		if r := f.run(args...); r.code != 1 || !strings.Contains(r.err, `no draft "typo"`) {
			t.Errorf("draftfs %v through the daemon: %s", args, r)
		}
	}
	d.stop()
	matches, _ := filepath.Glob(filepath.Join(f.state, "*", "drafts", "typo"))
	if len(matches) > 0 {
		t.Errorf("an unknown draft was created: %v", matches)
	}
}

// TestNestedRepositoryIsItsOwnWorkspace: the state of a directory does
// not capture a repository below it, and a command says which workspace
// it found above the current directory.
func TestNestedRepositoryIsItsOwnWorkspace(t *testing.T) {
	f := newFixture(t)
	f.file("sub/x.txt", "x\n")
	f.file("nested/.git/HEAD", "ref: refs/heads/main\n")
	f.file("nested/src/y.txt", "y\n")
	f.ok("discard", "--all") // gives the parent state
	parent := f.ok("socket").out
	r := f.runAt(filepath.Join(f.ws, "sub"), "socket")
	if r.out != parent || !strings.Contains(r.err, "workspace "+f.ws) {
		t.Errorf("socket from a subdirectory: %s; want %q and a note naming the workspace", r, parent)
	}
	for _, dir := range []string{"nested", "nested/src"} {
		r := f.runAt(filepath.Join(f.ws, dir), "socket")
		if r.code != 0 || r.out == parent {
			t.Errorf("socket from %s is the parent's: %s", dir, r)
		}
	}
}

// TestCommandsInsideMount: commands run inside a mount act on the
// workspace and draft the mount shows, and say so; as root and as an
// ordinary user, who mounts with fusermount3.
func TestCommandsInsideMount(t *testing.T) {
	needFUSE(t)
	whoever(t, testCommandsInsideMount)
}

func testCommandsInsideMount(t *testing.T, f *fixture) {
	f.file("sub/a.txt", "disk\n")
	mnt := filepath.Join(f.tmp, "view")
	f.serve(mnt)
	// Through the mount, as the user who mounted it (no allow_other).
	sh := f.as(exec.Command("sh", "-c", "echo draft > sub/a.txt && echo new > sub/new.txt"))
	sh.Dir = mnt
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("writing through the mount: %v\n%s", err, out)
	}
	r := f.runAt(filepath.Join(mnt, "sub"), "status")
	if r.code != 0 || r.out != "M sub/a.txt\nA sub/new.txt\n" || !strings.Contains(r.err, f.ws) {
		t.Errorf("status inside the mount: %s", r)
	}
	if r := f.runAt(filepath.Join(mnt, "sub"), "diff", "a.txt"); r.code != 0 || !strings.Contains(r.out, "+draft") {
		t.Errorf("diff of a relative path inside the mount: %s", r)
	}
	if got := f.disk("sub/a.txt"); got != "disk\n" {
		t.Errorf("the disk changed: %q", got)
	}
	entries, _ := os.ReadDir(f.state)
	if len(entries) != 1 {
		t.Errorf("state root holds %d workspaces, want 1", len(entries))
	}
}
