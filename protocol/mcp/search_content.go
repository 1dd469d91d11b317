package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"runtime"
	"strings"
	"sync"

	"github.com/draftfs/draftfs/overlay/agent"
)

// search_content answers "where is X" in one call: every text file below
// a path is searched (in parallel) for a literal or a regular expression,
// and the matching lines come back with line numbers and context, best
// first. A line scores more when the match has the pattern's exact case,
// is a whole word, or is what the line defines (func X, class X, def X,
// type X, const X, ...); a file ranks by its best line, then by how many
// lines match, then by how shallow and short its path is. Files with the
// same content are shown once, naming the others; overlapping context is
// merged so no line shows twice.

const (
	defaultContext    = 2
	maxContext        = 10
	defaultMaxResults = 50
	maxMaxResults     = 1000
	// maxShownLine bounds the bytes of one line shown; longer lines
	// (minified code) are cut around the match.
	maxShownLine = 400
)

var searchContentTool = &tool{
	name: "search_content", title: "Search File Contents", readOnly: true,
	desc: "Search the contents of the files below a path (or one file) for a pattern and return the matching lines " +
		"with their line numbers and context, best matches first: definitions of the pattern (func, class, def, type, ...), " +
		"whole-word and exact-case matches rank higher. Answers 'where is X' in one call. " +
		"The pattern is literal text unless regex is true (RE2 syntax); matching ignores case unless caseSensitive is true. " +
		"Files with identical content are listed once. Skips .git directories, binary files and files over the size limit. " +
		"Only searches within allowed directories.",
	props: []prop{
		pathProp,
		{name: "pattern", kind: kString, required: true, desc: "Text to find (a regular expression when regex is true)"},
		{name: "regex", kind: kBool, def: false, desc: "Treat pattern as a regular expression (RE2 syntax)"},
		{name: "caseSensitive", kind: kBool, def: false, desc: "Match case exactly"},
		{name: "include", kind: kStrings, def: []string{}, desc: "Only files whose path relative to path matches one of these globs, e.g. '**/*.go'"},
		excludes,
		{name: "contextLines", kind: kNumber, def: float64(defaultContext), desc: "Lines of context before and after each match (0 to 10)"},
		{name: "maxResults", kind: kNumber, def: float64(defaultMaxResults), desc: "Most matching lines to return (1 to 1000)"},
	},
	output: map[string]any{
		"total":     map[string]any{"type": "integer", "description": "Matching lines found"},
		"truncated": map[string]any{"type": "boolean", "description": "Whether some matching lines are left out"},
		"files": map[string]any{"type": "array", "items": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"path":        map[string]any{"type": "string"},
				"sameContent": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				"matches": map[string]any{"type": "array", "items": map[string]any{
					"type":       "object",
					"properties": map[string]any{"line": map[string]any{"type": "integer"}, "text": map[string]any{"type": "string"}},
				}},
			},
		}},
	},
	run: (*Server).searchContent,
}

// hit is one matching line.
type hit struct {
	line  int // 1-based
	score int
	lo    int // where the match starts in the line
}

// fileHits is what one file gave.
type fileHits struct {
	t     target
	depth int
	lines [][]byte // the file's lines without their ends, kept for context
	hits  []hit
	best  int
	sum   [32]byte
	same  []string // other files with the same content
}

func (s *Server) searchContent(ctx context.Context, a args) (*result, error) {
	root, err := s.validate(a.str("path"))
	if err != nil {
		return nil, err
	}
	m, err := newMatcher(a.str("pattern"), a.boolean("regex"), a.boolean("caseSensitive"))
	if err != nil {
		return nil, err
	}
	include, err := compileAll(a.strs("include"))
	if err != nil {
		return nil, err
	}
	exclude, err := compileAll(append(a.strs("excludePatterns"), "**/.git", "**/.git/**"))
	if err != nil {
		return nil, err
	}
	ctxLines := int(min(max(a.num("contextLines"), 0), maxContext))
	limit := int(min(max(a.num("maxResults"), 1), maxMaxResults))

	info, err := s.f.Stat(root.key)
	if err != nil {
		return nil, fsError(err, "stat", root.abs)
	}
	var todo []target
	if info.IsDir() {
		err = s.walk(ctx, root, exclude, func(t target, rel string, e agent.Info) error {
			// Named pipes, sockets and devices are never read: a pipe
			// would hang the search.
			special := e.Mode&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice) != 0
			if e.IsDir() || special || len(include) > 0 && !matchAny(include, rel) {
				return nil
			}
			todo = append(todo, t)
			return nil
		})
		if err != nil {
			return nil, err
		}
	} else {
		todo = []target{root}
	}
	found, skipped := s.scan(ctx, todo, m)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return renderSearch(a.str("pattern"), dedupe(rank(found)), skipped, ctxLines, limit, s.max), nil
}

// skips counts the files a search passed over.
type skips struct{ binary, large int }

// scan searches files in parallel; found keeps the order of todo.
func (s *Server) scan(ctx context.Context, todo []target, m *matcher) ([]*fileHits, skips) {
	results := make([]*fileHits, len(todo))
	kinds := make([]int, len(todo)) // 1 binary, 2 too large
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) * 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				next.Lock()
				k := i
				i++
				next.Unlock()
				if k >= len(todo) {
					return
				}
				results[k], kinds[k] = s.searchFile(todo[k], m)
			}
		}()
	}
	wg.Wait()
	var found []*fileHits
	var sk skips
	for k, r := range results {
		switch kinds[k] {
		case 1:
			sk.binary++
		case 2:
			sk.large++
		}
		if r != nil {
			found = append(found, r)
		}
	}
	return found, sk
}

// searchFile searches one file; kind says why it was passed over (1
// binary, 2 too large).
func (s *Server) searchFile(t target, m *matcher) (*fileHits, int) {
	b, err := s.f.ReadFile(t.key, s.max)
	switch {
	case errors.Is(err, agent.ErrTooLarge):
		return nil, 2
	case err != nil:
		return nil, 0
	case isBinary(b):
		return nil, 1
	case m.find(b) == nil:
		return nil, 0
	}
	fh := &fileHits{t: t, depth: strings.Count(t.key, "/"), sum: sha256.Sum256(b)}
	for n, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		fh.lines = append(fh.lines, line)
		if loc := m.find(line); loc != nil {
			score := m.lineScore(line, loc[0], loc[1])
			fh.hits = append(fh.hits, hit{line: n + 1, score: score, lo: loc[0]})
			fh.best = max(fh.best, score)
		}
	}
	if len(fh.hits) == 0 { // the match spans lines (a regexp with \n)
		return nil, 0
	}
	return fh, 0
}
