//go:build linux

package overlay_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// randPath is a path of up to depth elements from modelNames.
func (m *model) randPath(depth int) string {
	n := 1 + m.rng.IntN(depth)
	elems := make([]string, n)
	for i := range elems {
		elems[i] = modelNames[m.rng.IntN(len(modelNames))]
	}
	return strings.Join(elems, "/")
}

// pick is a path for an operation: mostly one that exists.
func (m *model) pick() string {
	if m.rng.IntN(10) < 7 {
		if all := m.refPaths(); len(all) > 0 {
			return all[m.rng.IntN(len(all))]
		}
	}
	return m.randPath(3)
}

func (m *model) randBytes() []byte {
	b := make([]byte, m.rng.IntN(40))
	for i := range b {
		b[i] = "abcdefgh\n"[m.rng.IntN(9)]
	}
	return b
}

func (m *model) randPerm(dir bool) fs.FileMode {
	if dir {
		return []fs.FileMode{0o755, 0o700, 0o750}[m.rng.IntN(3)]
	}
	return filePerms[m.rng.IntN(len(filePerms))]
}

// refPaths lists the reference tree, sorted.
func (m *model) refPaths() []string {
	var out []string
	filepath.WalkDir(m.ref, func(p string, de fs.DirEntry, err error) error {
		if err == nil && p != m.ref {
			rel, _ := filepath.Rel(m.ref, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

func (m *model) r(p string) string {
	if p == "" {
		return m.ref
	}
	return filepath.Join(m.ref, filepath.FromSlash(p))
}

// plain reports whether the os package and the view resolve p alike:
// no symlink among its parents, and, when follow, a final symlink chain
// that stays inside the tree and meets no symlink but at its ends. The
// view takes names with only the final element as a symlink (front ends
// resolve the rest: the kernel, or Resolve); other paths are skipped.
// It returns the path the chain ends at.
func (m *model) plain(p string, follow bool) (string, bool) {
	for hops := 0; ; hops++ {
		for q := parentOfKey(p); q != ""; q = parentOfKey(q) {
			if fi, err := os.Lstat(m.r(q)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return "", false
			}
		}
		fi, err := os.Lstat(m.r(p))
		if !follow || err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return p, true
		}
		if hops > 10 {
			return p, true // a loop: ELOOP on both sides
		}
		target, err := os.Readlink(m.r(p))
		if err != nil {
			return "", false
		}
		next, ok := m.linkKey(parentOfKey(p), target)
		if !ok {
			return "", false
		}
		p = next
	}
}

// linkKey is where a symlink in dir with target leads, when the walk
// there meets no symlink before its end and stays in the tree.
func (m *model) linkKey(dir, target string) (string, bool) {
	if path.IsAbs(target) {
		rest, ok := strings.CutPrefix(target, filepath.ToSlash(m.ref)+"/")
		if !ok {
			return "", false
		}
		dir, target = "", rest
	}
	var elems []string
	if dir != "" {
		elems = strings.Split(dir, "/")
	}
	parts := strings.Split(target, "/")
	for i, e := range parts {
		switch e {
		case "", ".":
			continue
		case "..":
			if len(elems) == 0 {
				return "", false
			}
			elems = elems[:len(elems)-1]
			continue
		}
		elems = append(elems, e)
		if i < len(parts)-1 {
			if fi, err := os.Lstat(m.r(strings.Join(elems, "/"))); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return "", false
			}
		}
	}
	return strings.Join(elems, "/"), true
}

func parentOfKey(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// touch records that the view changed p (or was asked to).
func (m *model) touch(ps ...string) {
	m.changes++
	for _, p := range ps {
		m.touched[p] = true
		if q, ok := m.plain(p, true); ok {
			m.touched[q] = true
		}
	}
}

// untouched reports whether no changing operation named p, one of its
// parents, or (for a directory) anything below it.
func (m *model) untouched(p string) bool {
	for q := range m.touched {
		if q == p || strings.HasPrefix(p, q+"/") || strings.HasPrefix(q, p+"/") || q == "" {
			return false
		}
	}
	return true
}

// same compares the errors of the two sides.
func (m *model) same(op string, verr, rerr error) bool {
	m.t.Helper()
	m.logf("%s: view %v, ref %v", op, verr, rerr)
	if errnoOf(verr) != errnoOf(rerr) {
		m.fail("%s: view error %v (%v), reference %v (%v)", op, verr, errnoOf(verr), rerr, errnoOf(rerr))
		return false
	}
	if verr != nil {
		var pe *fs.PathError
		if !errors.As(verr, &pe) && !errors.Is(verr, io.EOF) && !strings.Contains(verr.Error(), "O_APPEND") {
			m.fail("%s: view error %v (%T) is not a *fs.PathError", op, verr, verr)
			return false
		}
	}
	return verr == nil
}
