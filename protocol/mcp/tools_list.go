package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/draftfs/draftfs/protocol/mcp/internal/reference"

	"github.com/draftfs/draftfs/overlay/agent"
)

// readDir lists a directory for a tool, with Node's scandir errors.
func (s *Server) readDir(t target) ([]agent.Info, error) {
	ents, err := s.f.ReadDir(t.key)
	if err != nil {
		return nil, fsError(err, "scandir", t.abs)
	}
	return ents, nil
}

// isLink reports whether a listed entry is a symlink. Entries are listed
// as they are (not followed), so a symlink to a directory is a file, as
// Node's Dirent.isDirectory() says.
func isLink(i agent.Info) bool { return i.Mode.Type() == fs.ModeSymlink }

func dirOrFile(i agent.Info) string {
	if i.IsDir() {
		return "[DIR]"
	}
	return "[FILE]"
}

func (s *Server) listDirectory(_ context.Context, a args) (*result, error) {
	t, err := s.validate(a.str("path"))
	if err != nil {
		return nil, err
	}
	ents, err := s.readDir(t)
	if err != nil {
		return nil, err
	}
	lines := make([]string, len(ents))
	for i, e := range ents {
		lines[i] = dirOrFile(e) + " " + e.Name
	}
	return textResult(strings.Join(lines, "\n")), nil
}

func (s *Server) listDirectoryWithSizes(_ context.Context, a args) (*result, error) {
	t, err := s.validate(a.str("path"))
	if err != nil {
		return nil, err
	}
	ents, err := s.readDir(t)
	if err != nil {
		return nil, err
	}
	type entry struct {
		name string
		dir  bool
		size int64
	}
	list := make([]entry, len(ents))
	var nfiles, ndirs int
	var total int64
	for i, e := range ents {
		list[i] = entry{name: e.Name, dir: e.IsDir(), size: e.Size}
		if isLink(e) {
			// Sizes follow symlinks, as Node's stat does; one that leads
			// nowhere, or out of the workspace, counts 0.
			list[i].size = 0
			if info, err := s.f.Stat(joinKey(t.key, e.Name)); err == nil {
				list[i].size = info.Size
			}
		}
		if list[i].dir {
			ndirs++
		} else {
			nfiles++
			total += list[i].size
		}
	}
	if a.str("sortBy") == "size" {
		slices.SortStableFunc(list, func(x, y entry) int { return compareInt64(y.size, x.size) })
	} else {
		slices.SortStableFunc(list, func(x, y entry) int { return reference.LocaleCompare(x.name, y.name) })
	}
	lines := make([]string, 0, len(list)+3)
	for _, e := range list {
		size, kind := "", "[FILE]"
		if e.dir {
			kind = "[DIR]"
		} else {
			size = reference.PadStart(reference.FormatSize(e.size), 10)
		}
		lines = append(lines, kind+" "+reference.PadEnd(e.name, 30)+" "+size)
	}
	lines = append(lines, "", fmt.Sprintf("Total: %d files, %d directories", nfiles, ndirs), "Combined size: "+reference.FormatSize(total))
	return textResult(strings.Join(lines, "\n")), nil
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// treeNode is one entry of directory_tree's JSON; directories always have
// children, files never.
type treeNode struct {
	Name     string      `json:"name"`
	Type     string      `json:"type"`
	Children *[]treeNode `json:"children,omitempty"`
}

// treeExcludes compiles directory_tree's excludePatterns as the reference
// applies them: a pattern with "*" matches relative paths; one without
// matches a path, any path ending in it, or anything below such a path.
func treeExcludes(patterns []string) ([]*reference.Glob, error) {
	var out []*reference.Glob
	for _, p := range patterns {
		forms := []string{p}
		if !strings.Contains(p, "*") {
			forms = append(forms, "**/"+p, "**/"+p+"/**")
		}
		gs, err := compileAll(forms)
		if err != nil {
			return nil, err
		}
		out = append(out, gs...)
	}
	return out, nil
}

func matchAny(gs []*reference.Glob, p string) bool {
	for _, g := range gs {
		if g.Match(p) {
			return true
		}
	}
	return false
}

func (s *Server) directoryTree(ctx context.Context, a args) (*result, error) {
	excl, err := treeExcludes(a.strs("excludePatterns"))
	if err != nil {
		return nil, err
	}
	root := a.str("path")
	var build func(requested, rel string) ([]treeNode, error)
	build = func(requested, rel string) ([]treeNode, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t, err := s.validate(requested)
		if err != nil {
			return nil, err
		}
		ents, err := s.readDir(t)
		if err != nil {
			return nil, err
		}
		out := []treeNode{}
		for _, e := range ents {
			childRel := filepath.Join(rel, e.Name)
			if matchAny(excl, childRel) {
				continue
			}
			n := treeNode{Name: e.Name, Type: "file"}
			if e.IsDir() {
				n.Type = "directory"
				kids, err := build(filepath.Join(requested, e.Name), childRel)
				if err != nil {
					return nil, err
				}
				n.Children = &kids
			}
			out = append(out, n)
		}
		return out, nil
	}
	tree, err := build(root, "")
	if err != nil {
		return nil, err
	}
	return textResult(jsonStringify(tree)), nil
}

// jsonStringify is JSON.stringify(v, null, 2): two-space indents, no
// HTML escaping.
func jsonStringify(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%q", err.Error())
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// walk visits the entries below dir in name order, depth first, as the
// reference's searches do: excluded paths are skipped with what they
// hold, entries that fail validation (symlinks leading out, or nowhere)
// are skipped, symlinked directories are not entered, and directories
// below dir that cannot be listed are passed over. visit gets the entry's target,
// its path relative to dir and its listing info.
func (s *Server) walk(ctx context.Context, dir target, exclude []*reference.Glob, visit func(t target, rel string, info agent.Info) error) error {
	var rec func(d target, rel string) error
	rec = func(d target, rel string) error {
		ents, err := s.f.ReadDir(d.key)
		if err != nil {
			if rel == "" {
				_, err = s.readDir(d)
				return err
			}
			return nil
		}
		for _, e := range ents {
			if err := ctx.Err(); err != nil {
				return err
			}
			t, err := s.child(d, e.Name, isLink(e))
			if err != nil {
				continue
			}
			childRel := joinKey(rel, e.Name)
			if matchAny(exclude, childRel) {
				continue
			}
			if err := visit(t, childRel, e); err != nil {
				return err
			}
			if e.IsDir() {
				if err := rec(t, childRel); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return rec(dir, "")
}

func compileAll(patterns []string) ([]*reference.Glob, error) {
	out := make([]*reference.Glob, 0, len(patterns))
	for _, p := range patterns {
		g, err := reference.CompileGlob(p)
		if err != nil {
			return nil, &toolError{msg: err.Error()}
		}
		out = append(out, g)
	}
	return out, nil
}

func (s *Server) searchFiles(ctx context.Context, a args) (*result, error) {
	t, err := s.validate(a.str("path"))
	if err != nil {
		return nil, err
	}
	pattern, err := reference.CompileGlob(a.str("pattern"))
	if err != nil {
		return nil, &toolError{msg: err.Error()}
	}
	exclude, err := compileAll(a.strs("excludePatterns"))
	if err != nil {
		return nil, err
	}
	var found []string
	err = s.walk(ctx, t, exclude, func(c target, rel string, _ agent.Info) error {
		if pattern.Match(rel) {
			found = append(found, c.abs)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return textResult("No matches found"), nil
	}
	return textResult(strings.Join(found, "\n")), nil
}

func (s *Server) listAllowedDirectories(context.Context, args) (*result, error) {
	return textResult("Allowed directories:\n" + strings.Join(s.allowedDirs(), "\n")), nil
}
