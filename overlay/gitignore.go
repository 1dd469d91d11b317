//go:build linux

package overlay

import (
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/afero"
)

// What git ignores is folded in review: dependencies (.venv,
// node_modules), build output and git's own files (.git/) would bury the
// agent's edits. git itself decides, so every rule it has applies
// (.gitignore files at every level with negations, .git/info/exclude,
// core.excludesFile, tracked files never ignored): `git check-ignore`
// runs with the workspace's repository and a scratch work tree that
// holds the merged view's .gitignore files, so a .gitignore the agent
// wrote counts as it will once committed.

// gitRepo is the git repository the workspace is in, as git finds it
// from the workspace's root on disk.
type gitRepo struct {
	dir    string // absolute git directory
	top    string // absolute top of its work tree
	prefix string // the workspace's path below top: "" or ending in "/"
}

// gitEnv is the environment git runs with: the caller's, without what
// would point git at another repository or index.
func gitEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
			"GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// git runs git in dir with stdin and returns its output.
func git(dir string, stdin []byte, env []string, args ...string) ([]byte, error) {
	c := exec.Command("git", args...)
	c.Dir, c.Env = dir, gitEnv(env...)
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	return c.Output()
}

// repo finds the workspace's git repository; false when there is none
// (or no git).
func (w *Workspace) repo() (gitRepo, bool) {
	if !underGit(w.root) {
		return gitRepo{}, false // spare running git, for every review
	}
	out, err := git(w.root, nil, nil, "rev-parse", "--absolute-git-dir", "--show-toplevel", "--show-prefix")
	if err != nil {
		return gitRepo{}, false
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) < 2 {
		return gitRepo{}, false
	}
	r := gitRepo{dir: lines[0], top: lines[1]}
	if len(lines) > 2 {
		r.prefix = lines[2]
	}
	return r, true
}

// underGit reports whether dir or a parent has a .git (a directory, or
// a linked worktree's file), as git's discovery would find.
func underGit(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return true
		}
		if d == filepath.Dir(d) {
			return false
		}
	}
}

// inGitDir reports whether a key is git's own: a .git directory or
// something in one.
func inGitDir(key string) bool {
	return key == ".git" || strings.HasPrefix(key, ".git/") || strings.HasSuffix(key, "/.git") || strings.Contains(key, "/.git/")
}

// markIgnored sets Ignored and Fold on the status entries git ignores
// in the merged view, and on everything in a .git directory.
func (d *Draft) markIgnored(st []StatusEntry) {
	if len(st) == 0 {
		return
	}
	keys := make([]string, len(st))
	dirs := map[string]bool{"": true}
	for i, s := range st {
		keys[i] = strings.TrimSuffix(s.Path, "/")
		if strings.HasSuffix(s.Path, "/") {
			dirs[keys[i]] = true
		}
		for q := parentOf(keys[i]); q != ""; q = parentOf(q) {
			dirs[q] = true
		}
	}
	ignored := d.checkIgnore(keys, dirs)
	for i := range st {
		st[i].Fold = foldOf(keys[i], dirs[keys[i]], ignored)
		st[i].Ignored = st[i].Fold != ""
	}
}

// foldOf is the line an ignored key is folded into: its topmost ignored
// directory ("dir/"), itself when only it is ignored, "" when it is not.
func foldOf(key string, dir bool, ignored map[string]bool) string {
	if i := strings.Index("/"+key+"/", "/.git/"); i >= 0 {
		return key[:i] + ".git/"
	}
	var chain []string
	for q := key; q != ""; q = parentOf(q) {
		chain = append(chain, q)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		if ignored[chain[i]] {
			if chain[i] != key || dir {
				return chain[i] + "/"
			}
			return key
		}
	}
	return ""
}

// checkIgnore asks git which of keys and dirs (the directories among
// them and their parents) it ignores. Errors mean nothing is ignored:
// folding is a convenience, never a reason to fail a review.
func (d *Draft) checkIgnore(keys []string, dirs map[string]bool) map[string]bool {
	out := map[string]bool{}
	r, ok := d.w.repo()
	if !ok {
		return out
	}
	scratch, err := os.MkdirTemp("", "draftfs-ignore-")
	if err != nil {
		return out
	}
	defer os.RemoveAll(scratch)
	view := afero.Fs(d.Fs(SourceCLI))
	// The .gitignore files above the workspace, in the repository on disk.
	for q := strings.TrimSuffix(r.prefix, "/"); q != ""; q = parentOf(q) {
		copyIgnoreFile(filepath.Join(r.top, filepath.FromSlash(parentOf(q)), ".gitignore"), filepath.Join(scratch, filepath.FromSlash(parentOf(q))))
	}
	var query bytes.Buffer
	for dir := range dirs {
		at := filepath.Join(scratch, filepath.FromSlash(r.prefix+dir))
		if err := os.MkdirAll(at, 0o700); err != nil {
			return out
		}
		if b, err := afero.ReadFile(view, path.Join(dir, ".gitignore")); err == nil {
			os.WriteFile(filepath.Join(at, ".gitignore"), b, 0o600)
		}
		if dir != "" && !inGitDir(dir) {
			query.WriteString(r.prefix + dir + "\x00")
		}
	}
	for _, k := range keys {
		if !dirs[k] && !inGitDir(k) {
			query.WriteString(r.prefix + k + "\x00")
		}
	}
	if query.Len() == 0 {
		return out
	}
	// Status 1: nothing is ignored.
	res, _ := git(scratch, query.Bytes(), nil, "--git-dir="+r.dir, "--work-tree="+scratch, "check-ignore", "--stdin", "-z")
	for _, p := range strings.Split(string(res), "\x00") {
		if k, ok := strings.CutPrefix(p, r.prefix); ok && k != "" {
			out[k] = true
		}
	}
	return out
}

// copyIgnoreFile copies a .gitignore file from disk into dir, if there
// is one.
func copyIgnoreFile(src, dir string) {
	b, err := os.ReadFile(src)
	if err != nil {
		return
	}
	if os.MkdirAll(dir, 0o700) == nil {
		os.WriteFile(filepath.Join(dir, ".gitignore"), b, 0o600)
	}
}
