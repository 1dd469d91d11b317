package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersion checks that a built binary names the revision it was
// built from.
func TestVersion(t *testing.T) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout (git rev-parse: %v)", err)
	}
	top := strings.TrimSpace(string(out))
	exe := bin
	f := newFixture(t)
	r := f.ok("--version")
	if strings.Contains(r.out, "no VCS revision") {
		// go build stamps no revision in a linked git worktree (a
		// developer's; CI builds in a clone): build from a clone with
		// the worktree's uncommitted changes committed.
		clone := filepath.Join(f.tmp, "clone")
		gitRun(t, "", "clone", "-q", "--shared", top, clone)
		// The worktree's files as they are, untracked ones included.
		for _, k := range strings.Split(gitRun(t, top, "ls-files", "-z", "--cached", "--others", "--exclude-standard"), "\x00") {
			b, err := os.ReadFile(filepath.Join(top, k))
			if k == "" || os.IsNotExist(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(filepath.Dir(filepath.Join(clone, k)), 0o755)
			if err := os.WriteFile(filepath.Join(clone, k), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		gitRun(t, clone, "add", "-A")
		gitRun(t, clone, "commit", "-qm", "the worktree as it is", "--allow-empty")
		exe = filepath.Join(f.tmp, "draftfs")
		c := exec.Command("go", "build", "-buildvcs=true", "-o", exe, "./cmd/draftfs")
		c.Dir = clone
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("go build in a clone: %v\n%s", err, out)
		}
		top = clone
	}
	rev := strings.TrimSpace(gitRun(t, top, "rev-parse", "HEAD"))
	got, err := exec.Command(exe, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(got), "draftfs version ") || !strings.Contains(string(got), "revision "+rev) {
		t.Errorf("draftfs --version: %q; want the revision %s", got, rev)
	}
	if strings.Count(string(got), "\n") != 1 {
		t.Errorf("draftfs --version: %q; want one line", got)
	}
}

// gitRun runs git in dir and returns its output, failing the test on
// error.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
