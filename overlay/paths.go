//go:build linux

package overlay

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/draftfs/draftfs/overlay/beneath"
)

// clean turns a name given to the merged view into its key: slash
// separated, relative to the workspace root, "" for the root itself.
// Names are interpreted inside the view, so ".." can never climb out.
func clean(name string) string { return beneath.Key(name) }

// parentOf returns the directory key containing p ("" for top-level names).
func parentOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// baseOf returns the last element of p.
func baseOf(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}

// join joins a directory key and a relative remainder.
func join(dir, rest string) string {
	switch {
	case dir == "":
		return rest
	case rest == "":
		return dir
	}
	return dir + "/" + rest
}

// within reports whether the key p is dir or below it.
func within(p, dir string) bool { return beneath.Within(p, dir) }

// rebase moves p from below oldDir to below newDir; p must be within oldDir.
func rebase(p, oldDir, newDir string) string {
	if oldDir == "" {
		return join(newDir, p)
	}
	return join(newDir, strings.TrimPrefix(strings.TrimPrefix(p, oldDir), "/"))
}

// depth counts the elements of p.
func depth(p string) int {
	if p == "" {
		return 0
	}
	return strings.Count(p, "/") + 1
}

// Rel turns a path from an agent-facing caller into a workspace key:
// absolute paths must lie inside the workspace, relative ones are taken
// from its root, and neither may climb out with "..". It does not look at
// symlinks; [Draft.Resolve] does.
func (w *Workspace) Rel(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("overlay: empty path: %w", ErrOutside)
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("overlay: path %q contains a NUL byte: %w", p, ErrOutside)
	}
	p = filepath.ToSlash(p)
	if path.IsAbs(p) {
		root := filepath.ToSlash(w.root)
		c := path.Clean(p)
		if !beneath.Within(c, root) {
			return "", fmt.Errorf("overlay: %q is not inside the workspace %s: %w", p, w.root, ErrOutside)
		}
		return strings.TrimPrefix(strings.TrimPrefix(c, root), "/"), nil
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("overlay: %q climbs out of the workspace: %w", p, ErrOutside)
	}
	if c == "." {
		return "", nil
	}
	return c, nil
}

// Abs returns the absolute on-disk path of a workspace key.
func (w *Workspace) Abs(key string) string {
	if key == "" {
		return w.root
	}
	return filepath.Join(w.root, filepath.FromSlash(key))
}
