package mcp

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/beneath"
)

// target is a path a tool may use: abs is the absolute path shown to the
// client (symlinks resolved, as the reference's realpath), key the
// workspace key the merged view knows it by.
type target struct {
	abs string
	key string
}

func withinAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if beneath.Within(p, d) {
			return true
		}
	}
	return false
}

// expandHome expands a leading "~" as the reference does.
func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	return p
}

var windowsDrive = regexp.MustCompile(`^[A-Za-z]:([\\/]|$)`)

// absOf is the absolute path of a key.
func (s *Server) absOf(key string) string {
	if key == "" {
		return s.root
	}
	return joinAbs(s.root, key)
}

// joinAbs joins an absolute directory and a relative path.
func joinAbs(dir, rel string) string {
	if dir == "/" {
		return "/" + rel
	}
	return dir + "/" + rel
}

// keyOf is the key of an absolute path inside the workspace (which the
// caller has checked).
func (s *Server) keyOf(abs string) string {
	if abs == s.root {
		return ""
	}
	return strings.TrimPrefix(strings.TrimPrefix(abs, s.root), "/")
}

// absolute turns a requested path into an absolute, clean one the way the
// reference does: "~" expanded, relative paths taken from the first
// allowed directory that keeps them inside one.
func (s *Server) absolute(requested string, dirs []string) (string, error) {
	p := expandHome(requested)
	if windowsDrive.MatchString(p) {
		return "", errorf("Access denied - Windows-style path received on a POSIX host: %s", requested)
	}
	var abs string
	if filepath.IsAbs(p) {
		abs = filepath.Clean(p)
	} else {
		abs = filepath.Join(dirs[0], p)
		for _, d := range dirs {
			if c := filepath.Join(d, p); withinAny(c, dirs) {
				abs = c
				break
			}
		}
	}
	return abs, nil
}

// allowed makes requested absolute as the reference does and refuses it
// outside the allowed directories; it returns it with the workspace's
// alias undone, and the directories.
func (s *Server) allowed(requested string) (abs string, dirs []string, err error) {
	dirs = s.allowedDirs()
	abs, err = s.absolute(requested, dirs)
	if err != nil {
		return "", nil, err
	}
	if strings.ContainsRune(abs, 0) || !withinAny(abs, dirs) && !withinAny(s.unalias(abs), dirs) {
		return "", nil, errorf("Access denied - path outside allowed directories: %s not in %s", abs, strings.Join(dirs, ", "))
	}
	return s.unalias(abs), dirs, nil
}

// validate is the reference's validatePath over the merged view: the path
// must lie in an allowed directory, and so must wherever its symlinks lead
// (never outside the workspace). The path need not exist, but a symlink
// on the way must lead somewhere.
func (s *Server) validate(requested string) (target, error) {
	abs, dirs, err := s.allowed(requested)
	if err != nil {
		return target{}, err
	}
	key, err := s.f.Resolve(abs)
	switch {
	case errors.Is(err, overlay.ErrOutside):
		return target{}, errorf("Access denied - symlink target outside allowed directories: %s leads out of the workspace %s through a symlink, not in %s", abs, s.root, strings.Join(dirs, ", "))
	case err != nil:
		return target{}, fsError(err, "realpath", abs)
	}
	real := s.absOf(key)
	if !withinAny(real, dirs) {
		return target{}, errorf("Access denied - symlink target outside allowed directories: %s not in %s", real, strings.Join(dirs, ", "))
	}
	if unresolved := s.keyOf(abs); unresolved != key {
		if err := s.checkLinks(unresolved, abs); err != nil {
			return target{}, err
		}
	}
	// The reference's realpath fails for a path through a file (ENOTDIR)
	// and the like; only a missing path is let through.
	if _, err := s.f.Lstat(key); err != nil && errnoOf(err) != syscall.ENOENT {
		return target{}, fsError(err, "realpath", abs)
	}
	return target{abs: real, key: key}, nil
}

// checkLinks refuses a path with a dangling symlink on the way, as the
// reference's realpath walk does ("Parent directory does not exist").
func (s *Server) checkLinks(key, abs string) error {
	prefix := ""
	for _, elem := range strings.Split(key, "/") {
		prefix = joinKey(prefix, elem)
		info, err := s.f.Lstat(prefix)
		if err != nil {
			return nil // nothing below exists: no more links
		}
		if info.Mode.Type() != os.ModeSymlink {
			continue
		}
		if _, err := s.f.Stat(prefix); errnoOf(err) == syscall.ENOENT {
			return errorf("Parent directory does not exist: %s", filepath.Dir(abs))
		}
	}
	return nil
}

// validateEntry validates the entry itself, not what it links to: the
// parent is validated, the last element kept, so delete_file removes a
// symlink and not its target.
func (s *Server) validateEntry(requested string) (target, error) {
	abs, dirs, err := s.allowed(requested)
	if err != nil {
		return target{}, err
	}
	if slices.Contains(dirs, abs) {
		return s.validate(abs)
	}
	parent, err := s.validate(filepath.Dir(abs))
	if err != nil {
		return target{}, err
	}
	base := filepath.Base(abs)
	return target{abs: joinAbs(parent.abs, base), key: joinKey(parent.key, base)}, nil
}

func joinKey(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// child is the target of a directory entry. Entries that are not
// symlinks stay inside their validated directory; symlinks are validated
// like any requested path and must lead to something that exists, as
// the reference's search skips dangling links.
func (s *Server) child(dir target, name string, isLink bool) (target, error) {
	t := target{abs: joinAbs(dir.abs, name), key: joinKey(dir.key, name)}
	if !isLink {
		return t, nil
	}
	v, err := s.validate(t.abs)
	if err != nil {
		return target{}, err
	}
	if _, err := s.f.Stat(v.key); err != nil {
		return target{}, err
	}
	return t, nil
}

// fileURL is the file:// URL of an absolute path, as Node's pathToFileURL
// writes it.
func fileURL(abs string) string {
	return (&url.URL{Scheme: "file", Path: abs}).String()
}

// pathOfURI turns a root or resource URI into a path: file:// URIs are
// decoded, anything else is taken as a path, as the reference does.
func pathOfURI(uri string) (string, error) {
	if !strings.HasPrefix(uri, "file://") {
		return uri, nil
	}
	u, err := url.Parse(uri)
	if err != nil {
		return "", err
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Errorf("file URL host must be \"localhost\" or empty: %s", uri)
	}
	return u.Path, nil
}
