package reference

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// ErrBadGlob: a glob pattern that cannot be compiled.
var ErrBadGlob = errors.New("invalid glob pattern")

// maxGlobLength bounds a pattern, as minimatch does.
const maxGlobLength = 64 * 1024

// glob matches slash-separated relative paths the way the reference server
// calls minimatch (with {dot: true}): brace expansion, "**" as a whole
// segment for any number of segments (at least one when it ends the
// pattern), "*" and "?" within a segment, character classes with ranges,
// negation and POSIX classes, the extglobs @(), ?(), *() and +(), "\"
// escapes, a leading "!" negating the whole pattern, and a leading "#"
// matching nothing. Unlike minimatch, which quietly takes an unclosed "[",
// "{" or "(" literally, such patterns are refused: a pattern like "[a-"
// is almost always a mistake. The negated extglob !(...) is refused too.
type Glob struct {
	negate  bool
	never   bool        // a comment, or the empty pattern (matches only "")
	empty   bool        // the empty pattern
	alts    [][]segment // brace-expanded alternatives, split at "/"
	pattern string
}

// segment is one "/"-separated part of a pattern: the globstar, a literal,
// or a compiled regexp.
type segment struct {
	globstar bool
	literal  string
	re       *regexp.Regexp
}

// CompileGlob compiles a pattern; errors wrap ErrBadGlob and say why.
func CompileGlob(pattern string) (*Glob, error) {
	g := &Glob{pattern: pattern}
	if len(pattern) > maxGlobLength {
		return nil, fmt.Errorf("%w %.40q...: longer than %d bytes", ErrBadGlob, pattern, maxGlobLength)
	}
	if strings.HasPrefix(pattern, "#") {
		g.never = true
		return g, nil
	}
	if pattern == "" {
		g.empty = true
		return g, nil
	}
	p := pattern
	for strings.HasPrefix(p, "!") {
		g.negate = !g.negate
		p = p[1:]
	}
	expanded, err := expandBraces(p)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrBadGlob, pattern, err)
	}
	for _, e := range expanded {
		var segs []segment
		for _, part := range strings.Split(e, "/") {
			s, err := compileSegment(part)
			if err != nil {
				return nil, fmt.Errorf("%w %q: %v", ErrBadGlob, pattern, err)
			}
			// "**/**" is "**".
			if s.globstar && len(segs) > 0 && segs[len(segs)-1].globstar {
				continue
			}
			segs = append(segs, s)
		}
		g.alts = append(g.alts, segs)
	}
	return g, nil
}

// match reports whether the relative path p matches.
func (g *Glob) Match(p string) bool {
	if g.never {
		return false
	}
	if g.empty {
		return p == ""
	}
	parts := strings.Split(p, "/")
	for _, segs := range g.alts {
		if matchSegments(segs, parts) {
			return !g.negate
		}
	}
	return g.negate
}

// matchSegments matches path parts against pattern segments: "**" takes
// zero or more parts, or one or more when it is the last segment.
func matchSegments(segs []segment, parts []string) bool {
	for i, s := range segs {
		if s.globstar {
			rest := segs[i+1:]
			if len(rest) == 0 {
				return len(parts) > i
			}
			for j := i; j <= len(parts); j++ {
				if matchSegments(rest, parts[j:]) {
					return true
				}
			}
			return false
		}
		if i >= len(parts) || !s.matches(parts[i]) {
			return false
		}
		if i == len(segs)-1 {
			return len(parts) == len(segs)
		}
	}
	return len(segs) == 0 && len(parts) == 0
}

func (s segment) matches(name string) bool {
	if s.re != nil {
		return s.re.MatchString(name)
	}
	return s.literal == name
}

// compileSegment turns one segment into a literal or a regexp.
func compileSegment(part string) (segment, error) {
	if part == "**" {
		return segment{globstar: true}, nil
	}
	c := &segCompiler{src: part}
	re, magic, err := c.sequence(false)
	if err != nil {
		return segment{}, err
	}
	if c.pos < len(c.src) {
		return segment{}, fmt.Errorf("unbalanced %q", c.src[c.pos])
	}
	if !magic {
		return segment{literal: unescapeGlob(part)}, nil
	}
	rx, err := regexp.Compile("^(?s:" + re + ")$")
	if err != nil {
		return segment{}, err
	}
	return segment{re: rx}, nil
}

// unescapeGlob drops the backslashes of a pattern without magic.
func unescapeGlob(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// segCompiler translates one segment into RE2 syntax.
type segCompiler struct {
	src string
	pos int
}

// sequence compiles until the end, or until "|" or ")" inside an extglob.
func (c *segCompiler) sequence(inGroup bool) (string, bool, error) {
	var re strings.Builder
	magic := false
	for c.pos < len(c.src) {
		ch := c.src[c.pos]
		if inGroup && (ch == '|' || ch == ')') {
			return re.String(), magic, nil
		}
		if strings.IndexByte("?*+@!", ch) >= 0 && c.pos+1 < len(c.src) && c.src[c.pos+1] == '(' {
			if ch == '!' {
				return "", false, errors.New("negated extglob !(...) is not supported")
			}
			c.pos += 2
			var alts []string
			for {
				a, _, err := c.sequence(true)
				if err != nil {
					return "", false, err
				}
				alts = append(alts, a)
				if c.pos >= len(c.src) {
					return "", false, fmt.Errorf("unclosed %q", string(ch)+"(")
				}
				if c.src[c.pos] == ')' {
					c.pos++
					break
				}
				c.pos++ // "|"
			}
			group := "(?:" + strings.Join(alts, "|") + ")"
			switch ch {
			case '?':
				group += "?"
			case '*':
				group += "*"
			case '+':
				group += "+"
			}
			re.WriteString(group)
			magic = true
			continue
		}
		switch ch {
		case '\\':
			c.pos++
			if c.pos >= len(c.src) {
				re.WriteString(regexp.QuoteMeta(`\`))
				continue
			}
			r, n := utf8.DecodeRuneInString(c.src[c.pos:])
			re.WriteString(regexp.QuoteMeta(string(r)))
			c.pos += n
		case '*':
			re.WriteString(`[^/]*`)
			c.pos++
			magic = true
		case '?':
			re.WriteString(`[^/]`)
			c.pos++
			magic = true
		case '[':
			class, err := c.class()
			if err != nil {
				return "", false, err
			}
			re.WriteString(class)
			magic = true
		default:
			r, n := utf8.DecodeRuneInString(c.src[c.pos:])
			re.WriteString(regexp.QuoteMeta(string(r)))
			c.pos += n
		}
	}
	if inGroup {
		return "", false, errors.New(`unclosed "("`)
	}
	return re.String(), magic, nil
}

// posixClasses are the [:name:] classes minimatch knows, in RE2 syntax.
var posixClasses = map[string]string{
	"alnum": `\p{L}\p{Nl}\p{Nd}`, "alpha": `\p{L}\p{Nl}`, "ascii": `\x00-\x7f`,
	"blank": `\p{Zs}\t`, "cntrl": `\p{Cc}`, "digit": `\p{Nd}`, "graph": `\p{L}\p{M}\p{N}\p{P}\p{S}`,
	"lower": `\p{Ll}`, "print": `\p{L}\p{M}\p{N}\p{P}\p{S}\p{Zs}`, "punct": `\p{P}`,
	"space": `\p{Z}\t\r\n\v\f`, "upper": `\p{Lu}`, "word": `\p{L}\p{Nl}\p{Nd}\p{Pc}`, "xdigit": `A-Fa-f0-9`,
}

// class compiles a bracket expression starting at c.pos.
func (c *segCompiler) class() (string, error) {
	start := c.pos
	i := c.pos + 1
	var b strings.Builder
	negate := false
	if i < len(c.src) && (c.src[i] == '!' || c.src[i] == '^') {
		negate = true
		i++
	}
	first := true
	for ; i < len(c.src); first = false {
		ch := c.src[i]
		if ch == ']' && !first {
			c.pos = i + 1
			if b.Len() == 0 {
				return "", fmt.Errorf("empty character class %q", c.src[start:c.pos])
			}
			if negate {
				return "[^/" + b.String() + "]", nil
			}
			return "[" + b.String() + "]", nil
		}
		if ch == '[' && i+1 < len(c.src) && c.src[i+1] == ':' {
			end := strings.Index(c.src[i+2:], ":]")
			if end >= 0 {
				name := c.src[i+2 : i+2+end]
				cls, ok := posixClasses[name]
				if !ok {
					return "", fmt.Errorf("unknown character class [:%s:]", name)
				}
				b.WriteString(cls)
				i += 2 + end + 2
				continue
			}
		}
		if ch == '\\' && i+1 < len(c.src) {
			i++
		}
		lo, n := utf8.DecodeRuneInString(c.src[i:])
		i += n
		if i+1 < len(c.src) && c.src[i] == '-' && c.src[i+1] != ']' {
			j := i + 1
			if c.src[j] == '\\' && j+1 < len(c.src) {
				j++
			}
			hi, m := utf8.DecodeRuneInString(c.src[j:])
			if hi < lo {
				return "", fmt.Errorf("bad range %q", c.src[i-n:j+m])
			}
			b.WriteString(classRune(lo) + "-" + classRune(hi))
			i = j + m
			continue
		}
		b.WriteString(classRune(lo))
	}
	return "", fmt.Errorf("unclosed %q", c.src[start:])
}

func classRune(r rune) string {
	if r < utf8.RuneSelf && strings.ContainsRune(`\-[]^`, r) {
		return `\` + string(r)
	}
	return string(r)
}
