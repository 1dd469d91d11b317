package mcp

import (
	"context"
	"strings"
)

// draftKeys are the keys draft_status and draft_diff report on: the
// paths asked for, else the allowed directories.
func (s *Server) draftKeys(a args) ([]string, error) {
	var keys []string
	if paths := a.strs("paths"); len(paths) > 0 {
		for _, p := range paths {
			t, err := s.validateEntry(p)
			if err != nil {
				return nil, err
			}
			keys = append(keys, t.key)
		}
		return keys, nil
	}
	for _, d := range s.allowedDirs() {
		keys = append(keys, s.keyOf(d))
	}
	return keys, nil
}

// statusPath is a status path (a key, "/" ending a directory) made
// absolute.
func (s *Server) statusPath(p string) string {
	if dir, ok := strings.CutSuffix(p, "/"); ok {
		return s.absOf(dir) + "/"
	}
	return s.absOf(p)
}

const noChanges = "The draft has no changes"

func (s *Server) draftStatus(_ context.Context, a args) (*result, error) {
	keys, err := s.draftKeys(a)
	if err != nil {
		return nil, err
	}
	entries, err := s.f.Status(keys...)
	if err != nil {
		return nil, err
	}
	lines := make([]string, 0, len(entries))
	changes := make([]any, 0, len(entries))
	for _, e := range entries {
		line := e.Letter() + " " + s.statusPath(e.Path)
		c := map[string]any{"path": s.statusPath(e.Path), "change": e.Change, "conflict": e.Conflict}
		if e.From != "" {
			line = e.Letter() + " " + s.statusPath(e.From) + " -> " + s.statusPath(e.Path)
			c["from"] = s.statusPath(e.From)
		}
		lines = append(lines, line)
		changes = append(changes, c)
	}
	text := strings.Join(lines, "\n")
	if len(lines) == 0 {
		text = noChanges
	}
	return &result{text: text, structured: map[string]any{"changes": changes}}, nil
}

func (s *Server) draftDiff(_ context.Context, a args) (*result, error) {
	keys, err := s.draftKeys(a)
	if err != nil {
		return nil, err
	}
	diffs, err := s.f.Diff(keys...)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, d := range diffs {
		b.WriteString(d.Patch)
	}
	if b.Len() == 0 {
		return textResult(noChanges), nil
	}
	return textResult(b.String()), nil
}
