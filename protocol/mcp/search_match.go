package mcp

import (
	"bytes"
	"regexp"
	"sync"
	"unicode"
	"unicode/utf8"
)

// How search_content matches and scores a line.

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

// definition matches what comes before a name that a line defines;
// compiled on first use, not at every draftfs command's start (50 KB,
// up to 1 ms).
var definition = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[\s(])(?:func|function|def|class|type|interface|struct|enum|trait|impl|fn|const|let|var|val|module|package|namespace|macro|#define|defn|sub|record|object)\s+(?:\([^)]*\)\s*)?[*&]?$`)
})

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
	if definition().Match(bytes.TrimRight(line[:lo], " \t")) || definition().Match(line[:lo]) {
		score += 10
	}
	return score
}
