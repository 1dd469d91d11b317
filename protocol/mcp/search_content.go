package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/draftfs/draftfs/protocol/mcp/internal/reference"

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

// matcher finds the pattern in a line.
type matcher struct {
	re      *regexp.Regexp // nil: a literal
	literal []byte
	fold    bool   // the literal is ASCII, matched ignoring case
	exact   []byte // the pattern as given, for the exact-case bonus (literal searches)
}

// find returns the first match in b, or nil.
func (m *matcher) find(b []byte) []int {
	i := -1
	switch {
	case m.re != nil:
		return m.re.FindIndex(b)
	case m.fold:
		i = indexFoldASCII(b, m.literal)
	default:
		i = bytes.Index(b, m.literal)
	}
	if i < 0 {
		return nil
	}
	return []int{i, i + len(m.literal)}
}

// indexFoldASCII finds an ASCII pattern in b ignoring case, much faster
// than a (?i) regexp.
func indexFoldASCII(b, p []byte) int {
	lo, up := lowerASCII(p[0]), upperASCII(p[0])
	for i := 0; i+len(p) <= len(b); {
		j := bytes.IndexByte(b[i:len(b)-len(p)+1], lo)
		if lo != up {
			if k := bytes.IndexByte(b[i:len(b)-len(p)+1], up); k >= 0 && (j < 0 || k < j) {
				j = k
			}
		}
		if j < 0 {
			return -1
		}
		i += j
		if equalFoldASCII(b[i:i+len(p)], p) {
			return i
		}
		i++
	}
	return -1
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func upperASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

func equalFoldASCII(a, b []byte) bool {
	for i := range a {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func newMatcher(pattern string, isRegex, caseSensitive bool) (*matcher, error) {
	if pattern == "" {
		return nil, errorf("The pattern is empty: give the text to search for")
	}
	m := &matcher{exact: []byte(pattern)}
	expr := pattern
	if !isRegex {
		if caseSensitive || isASCII(pattern) {
			m.literal, m.fold = []byte(pattern), !caseSensitive
			return m, nil
		}
		expr = regexp.QuoteMeta(pattern)
	}
	if !caseSensitive {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, errorf("Invalid regular expression %q: %v", pattern, err)
	}
	if isRegex {
		m.exact = nil
	}
	m.re = re
	return m, nil
}

// definition matches what comes before a name that a line defines.
var definition = regexp.MustCompile(`(?:^|[\s(])(?:func|function|def|class|type|interface|struct|enum|trait|impl|fn|const|let|var|val|module|package|namespace|macro|#define|defn|sub|record|object)\s+(?:\([^)]*\)\s*)?[*&]?$`)

func isWordByte(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// lineScore rates a match at line[lo:hi].
func (m *matcher) lineScore(line []byte, lo, hi int) int {
	score := 1
	if m.exact != nil && bytes.Contains(line, m.exact) {
		score += 2
	}
	before, _ := utf8.DecodeLastRune(line[:lo])
	after, _ := utf8.DecodeRune(line[hi:])
	if (lo == 0 || !isWordByte(before)) && (hi == len(line) || !isWordByte(after)) {
		score += 3
	}
	if definition.Match(bytes.TrimRight(line[:lo], " \t")) || definition.Match(line[:lo]) {
		score += 10
	}
	return score
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

// rank orders files best first.
func rank(found []*fileHits) []*fileHits {
	slices.SortStableFunc(found, func(x, y *fileHits) int {
		switch {
		case x.best != y.best:
			return y.best - x.best
		case len(x.hits) != len(y.hits):
			return len(y.hits) - len(x.hits)
		case x.depth != y.depth:
			return x.depth - y.depth
		}
		return strings.Compare(x.t.abs, y.t.abs)
	})
	return found
}

// dedupe folds files with the same content into the best-ranked one.
func dedupe(found []*fileHits) []*fileHits {
	first := map[[32]byte]*fileHits{}
	var out []*fileHits
	for _, f := range found {
		if g, ok := first[f.sum]; ok {
			g.same = append(g.same, f.t.abs)
			continue
		}
		first[f.sum] = f
		out = append(out, f)
	}
	return out
}

func renderSearch(pattern string, found []*fileHits, sk skips, ctxLines, limit int, maxSize int64) *result {
	total := 0
	for _, f := range found {
		total += len(f.hits)
	}
	var skipNote string
	if sk.binary > 0 || sk.large > 0 {
		skipNote = fmt.Sprintf(" (skipped %s and %s over %s)", plural(sk.binary, "binary file"), plural(sk.large, "file"), reference.FormatSize(maxSize))
	}
	if total == 0 {
		return &result{text: "No matches found" + skipNote, structured: map[string]any{"total": 0, "truncated": false, "files": []any{}}}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Found %s in %s for %q%s", plural(total, "matching line"), plural(len(found), "file"), pattern, skipNote)
	var filesOut []any
	shown := 0
	for _, f := range found {
		if shown == limit {
			break
		}
		hits := f.hits
		if len(hits) > limit-shown {
			hits = slices.Clone(hits)
			slices.SortStableFunc(hits, func(x, y hit) int { return y.score - x.score })
			hits = hits[:limit-shown]
			slices.SortFunc(hits, func(x, y hit) int { return x.line - y.line })
		}
		shown += len(hits)
		fmt.Fprintf(&b, "\n\n%s", f.t.abs)
		if len(f.hits) != len(hits) {
			fmt.Fprintf(&b, " (%d of %s)", len(hits), plural(len(f.hits), "matching line"))
		}
		if len(f.same) > 0 {
			fmt.Fprintf(&b, " (same content: %s)", strings.Join(f.same, ", "))
		}
		var matches []any
		end := 0 // the last line shown, 1-based
		for _, h := range hits {
			from := max(1, h.line-ctxLines)
			switch {
			case from <= end:
				from = end + 1
			case end > 0 && from > end+1:
				b.WriteString("\n  --")
			}
			to := min(len(f.lines), h.line+ctxLines)
			for n := from; n <= to; n++ {
				sep, lo := "-", hitStart(hits, n)
				if lo >= 0 {
					sep = ":"
				}
				fmt.Fprintf(&b, "\n  %s%s %s", strconv.Itoa(n), sep, shownLine(f.lines[n-1], lo))
			}
			end = max(end, to)
			matches = append(matches, map[string]any{"line": h.line, "text": shownLine(f.lines[h.line-1], h.lo)})
		}
		fo := map[string]any{"path": f.t.abs, "matches": matches}
		if len(f.same) > 0 {
			fo["sameContent"] = f.same
		}
		filesOut = append(filesOut, fo)
	}
	if shown < total {
		fmt.Fprintf(&b, "\n\nShowing %d of %s, best first; narrow the search with path, include or excludePatterns, or raise maxResults.", shown, plural(total, "matching line"))
	}
	return &result{text: b.String(), structured: map[string]any{"total": total, "truncated": shown < total, "files": filesOut}}
}

// hitStart is where the match starts on a shown line, -1 if it has none.
func hitStart(hits []hit, line int) int {
	for _, h := range hits {
		if h.line == line {
			return h.lo
		}
	}
	return -1
}

// shownLine is a line as shown: cut to maxShownLine bytes around the
// match at lo (or from the start), on rune boundaries, marked with "…".
func shownLine(line []byte, lo int) string {
	if len(line) <= maxShownLine {
		return reference.JSText(line)
	}
	start := 0
	if lo > maxShownLine/2 {
		start = lo - maxShownLine/4
	}
	end := min(len(line), start+maxShownLine)
	for start > 0 && !utf8.RuneStart(line[start]) {
		start--
	}
	for end < len(line) && !utf8.RuneStart(line[end]) {
		end++
	}
	out := reference.JSText(line[start:end])
	if start > 0 {
		out = "…" + out
	}
	if end < len(line) {
		out += "…"
	}
	return out
}

// plural is "1 file", "2 files".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
