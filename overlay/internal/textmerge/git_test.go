package textmerge

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// requireGit skips a comparison with git when git is not installed.
func requireGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed; this test compares with git's own output")
	}
}

// runGit runs git in dir with no system, global or user configuration and
// no attributes, so its output depends on git's defaults only. It returns
// stdout and the exit code; it fails the test when git cannot run or exits
// with a code not in ok.
func runGit(t testing.TB, dir string, ok func(code int) bool, args ...string) ([]byte, int) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"HOME="+dir, "XDG_CONFIG_HOME="+dir, "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	if !ok(code) {
		t.Fatalf("git %s: exit %d: %s", strings.Join(args, " "), code, stderr.Bytes())
	}
	return out, code
}

// writeFile writes content to dir/name, creating parent directories.
func writeFile(t testing.TB, dir, name string, content []byte) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
}

// gitPaths writes the sides that exist as old/<name> and new/<name> in a
// fresh directory and returns it with the arguments to give git and
// Unified ("/dev/null" for a side that does not exist).
func gitPaths(t testing.TB, name string, old, new []byte, oldExists, newExists bool) (dir, oldArg, newArg string) {
	dir = t.TempDir()
	oldArg, newArg = "/dev/null", "/dev/null"
	if oldExists {
		oldArg = "old/" + name
		writeFile(t, dir, oldArg, old)
	}
	if newExists {
		newArg = "new/" + name
		writeFile(t, dir, newArg, new)
	}
	return dir, oldArg, newArg
}

// gitDiff returns `git diff --no-index` from old to new, without the lines
// before "---" (or "Binary files") that git adds: "diff --git", "index",
// "new file mode" and the like.
func gitDiff(t testing.TB, dir, oldArg, newArg string) string {
	t.Helper()
	out, _ := runGit(t, dir, func(c int) bool { return c <= 1 },
		"diff", "--no-index", "--no-color", "--no-ext-diff", "--", oldArg, newArg)
	s := string(out)
	for s != "" && !strings.HasPrefix(s, "--- ") && !strings.HasPrefix(s, "Binary files ") {
		_, s, _ = strings.Cut(s, "\n")
	}
	return s
}

// gitNumstat returns `git diff --no-index --numstat` counts; binary
// content reports binary=true.
func gitNumstat(t testing.TB, dir, oldArg, newArg string) (added, deleted int, binary bool) {
	t.Helper()
	out, _ := runGit(t, dir, func(c int) bool { return c <= 1 },
		"diff", "--no-index", "--numstat", "--", oldArg, newArg)
	if len(out) == 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(out))
	if f[0] == "-" {
		return 0, 0, true
	}
	var err1, err2 error
	added, err1 = strconv.Atoi(f[0])
	deleted, err2 = strconv.Atoi(f[1])
	if err := errors.Join(err1, err2); err != nil {
		t.Fatalf("numstat %q: %v", out, err)
	}
	return added, deleted, false
}

// gitMergeFile returns `git merge-file -p --diff3 -L ours -L base -L
// theirs` and whether it merged cleanly.
func gitMergeFile(t testing.TB, base, ours, theirs []byte) ([]byte, bool) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "base", base)
	writeFile(t, dir, "ours", ours)
	writeFile(t, dir, "theirs", theirs)
	out, code := runGit(t, dir, func(c int) bool { return c >= 0 && c < 128 },
		"merge-file", "-p", "--diff3", "-L", "ours", "-L", "base", "-L", "theirs", "ours", "base", "theirs")
	return out, code == 0
}
