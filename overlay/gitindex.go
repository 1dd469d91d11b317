//go:build linux

package overlay

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// git's index (.git/index) is the staging area plus a cache of the work
// tree's stat data: `git status` run by an agent in the view rewrites it
// with new stat data (the view's inode numbers and times) and nothing
// else. So the index is compared by what it stages, as
// `git ls-files --stage` lists it (mode, object, stage, path):
//
//   - an index the agent changed only by refreshing is no change (see
//     same), whatever the user did meanwhile;
//   - an index both changed is merged path by path (each path takes the
//     side that changed it), and is a conflict only when both staged
//     different things for one path.

// mergeGit merges a file of a .git directory both sides changed, the
// way git's own files call for; ok is false for a file it leaves to the
// text merge.
//
//   - the index: path by path (mergeIndex);
//   - reflogs (.git/logs/...) only grow: both sides' new lines are kept,
//     the user's first;
//   - COMMIT_EDITMSG, ORIG_HEAD and FETCH_HEAD are scratch: the user's
//     stay;
//   - a ref or HEAD both moved is a conflict that says so.
func mergeGit(d *Draft, key, lower string, base, ours, theirs []byte) (reason string, merged []byte, ok bool) {
	if !inGitDir(lower) {
		return "", nil, false
	}
	k := "/" + lower
	in := k[strings.LastIndex(k, "/.git/")+len("/.git/"):]
	switch {
	case isGitIndex(lower):
		m, ok, err := mergeIndex(d.gitDirOf(lower), base, ours, theirs)
		if err == nil && ok {
			return "", m, true
		}
		return "you and the agent staged different content for the same paths in git's index (your git add and the agent's); keep your staging with draftfs discard " + key + " (the agent's commits stay in the draft)", nil, true
	case strings.HasPrefix(in, "logs/") && bytes.HasPrefix(ours, base) && bytes.HasPrefix(theirs, base):
		return "", append(append([]byte{}, theirs...), ours[len(base):]...), true
	case in == "COMMIT_EDITMSG" || in == "ORIG_HEAD" || in == "FETCH_HEAD":
		return "", theirs, true
	case in == "HEAD" || strings.HasPrefix(in, "refs/") || in == "packed-refs":
		what := "git's HEAD (you both switched branches or committed)"
		if r, ok := strings.CutPrefix(in, "refs/heads/"); ok {
			what = "branch " + r + " (you both committed to it)"
		} else if in != "HEAD" {
			what = in
		}
		return "you and the agent both moved " + what + "; keep yours with draftfs discard " + key + ", or the agent's with draftfs commit --force " + key, nil, true
	}
	return "", nil, false
}

// isGitIndex reports whether a key is a git index file: .git/index, or
// a linked worktree's (.git/worktrees/NAME/index).
func isGitIndex(key string) bool {
	k := "/" + key
	if strings.HasSuffix(k, "/.git/index") {
		return true
	}
	dir, name := filepath.Split(k)
	return name == "index" && strings.Contains(dir, "/.git/worktrees/")
}

// gitDirOf is the git directory on disk an index key belongs to.
func (d *Draft) gitDirOf(key string) string {
	k := "/" + key
	i := strings.LastIndex(k, "/.git/")
	return d.w.Abs(k[1 : i+len("/.git")])
}

// indexEntries lists what an index stages: path → "mode object stage".
func indexEntries(gitDir string, content []byte) (map[string]string, error) {
	f, err := os.CreateTemp("", "draftfs-index-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	out, err := git("/", nil, []string{"GIT_INDEX_FILE=" + f.Name()}, "--git-dir="+gitDir, "ls-files", "--stage", "-z")
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(out), "\x00") {
		if info, p, ok := strings.Cut(line, "\t"); ok {
			m[p] = info
		}
	}
	return m, nil
}

// sameIndex reports whether two index contents stage the same.
func sameIndex(gitDir string, a, b []byte) bool {
	ea, err := indexEntries(gitDir, a)
	if err != nil {
		return false
	}
	eb, err := indexEntries(gitDir, b)
	if err != nil || len(ea) != len(eb) {
		return false
	}
	for p, v := range ea {
		if eb[p] != v {
			return false
		}
	}
	return true
}

// mergeIndex merges what two indexes stage since base, path by path; ok
// is false when both staged different things for one path. The result
// has no stat data: git refreshes it on its next status.
func mergeIndex(gitDir string, base, ours, theirs []byte) ([]byte, bool, error) {
	var sides [3]map[string]string
	for i, b := range [][]byte{base, ours, theirs} {
		m, err := indexEntries(gitDir, b)
		if err != nil {
			return nil, false, err
		}
		sides[i] = m
	}
	paths := map[string]bool{}
	for _, m := range sides {
		for p := range m {
			paths[p] = true
		}
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	var info bytes.Buffer
	for _, p := range sorted {
		b, o, t := sides[0][p], sides[1][p], sides[2][p]
		v := o
		switch {
		case o == b:
			v = t
		case t == b, t == o:
		default:
			return nil, false, nil
		}
		if v != "" {
			info.WriteString(v + "\t" + p + "\x00")
		}
	}
	dir, err := os.MkdirTemp("", "draftfs-index-")
	if err != nil {
		return nil, false, err
	}
	defer os.RemoveAll(dir)
	idx := filepath.Join(dir, "index")
	if _, err := git("/", info.Bytes(), []string{"GIT_INDEX_FILE=" + idx}, "--git-dir="+gitDir, "update-index", "-z", "--index-info"); err != nil {
		return nil, false, err
	}
	m, err := os.ReadFile(idx)
	return m, err == nil, err
}
