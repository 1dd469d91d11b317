package reference

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Brace expansion, as minimatch does it before matching: lists
// ("{a,b}") and sequences ("{1..3}", "{a..c}").

// maxBraceExpansions bounds the patterns one brace expression expands to.
const maxBraceExpansions = 10_000

// expandBraces expands {a,b} alternatives and {x..y[..step]} sequences,
// nested or in a row, as the brace-expansion package does for minimatch.
// A group that is neither ("{a}", "{}") stays literal, its inside still
// expanded. A backslash keeps the next byte literal.
func expandBraces(p string) ([]string, error) {
	open := -1
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth == 0 {
				continue
			}
			if depth--; depth > 0 {
				continue
			}
			body := p[open+1 : i]
			items, ok, err := braceItems(body)
			if err != nil {
				return nil, err
			}
			var mids []string
			if ok {
				for _, it := range items {
					e, err := expandBraces(it)
					if err != nil {
						return nil, err
					}
					mids = append(mids, e...)
				}
			} else {
				inner, err := expandBraces(body)
				if err != nil {
					return nil, err
				}
				for _, s := range inner {
					mids = append(mids, "{"+s+"}")
				}
			}
			rest, err := expandBraces(p[i+1:])
			if err != nil {
				return nil, err
			}
			return combine([]string{p[:open]}, mids, rest)
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("unclosed %q", "{")
	}
	return []string{p}, nil
}

func combine(heads, mids, tails []string) ([]string, error) {
	if len(heads)*len(mids)*len(tails) > maxBraceExpansions {
		return nil, fmt.Errorf("braces expand to more than %d patterns", maxBraceExpansions)
	}
	out := make([]string, 0, len(heads)*len(mids)*len(tails))
	for _, h := range heads {
		for _, m := range mids {
			for _, t := range tails {
				out = append(out, h+m+t)
			}
		}
	}
	return out, nil
}

// braceItems splits the body of a brace group at its top-level commas, or
// expands a sequence; ok is false when the group is not an expansion.
func braceItems(body string) ([]string, bool, error) {
	var items []string
	depth, last := 0, 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				items = append(items, body[last:i])
				last = i + 1
			}
		}
	}
	if items != nil {
		return append(items, body[last:]), true, nil
	}
	seq, ok, err := braceSequence(body)
	return seq, ok, err
}

// braceSequence expands "1..5", "a..e", "1..10..2" and zero-padded
// "01..10"; ok is false when body is not a sequence.
func braceSequence(body string) (_ []string, ok bool, _ error) {
	parts := strings.Split(body, "..")
	if len(parts) != 2 && len(parts) != 3 {
		return nil, false, nil
	}
	step := 1
	if len(parts) == 3 {
		s, err := strconv.Atoi(parts[2])
		if err != nil {
			return nil, false, nil
		}
		step = max(s, -s, 1)
	}
	from, to, width, ok := seqEnds(parts[0], parts[1])
	if !ok {
		return nil, false, nil
	}
	if max(to-from, from-to)/step >= maxBraceExpansions {
		return nil, false, fmt.Errorf("braces expand to more than %d patterns", maxBraceExpansions)
	}
	if from > to {
		step = -step
	}
	var out []string
	for i := from; (step > 0 && i <= to) || (step < 0 && i >= to); i += step {
		if width < 0 {
			out = append(out, string(rune(i)))
			continue
		}
		s := strconv.Itoa(max(i, -i))
		if len(s) < width {
			s = strings.Repeat("0", width-len(s)) + s
		}
		if i < 0 {
			s = "-" + s
		}
		out = append(out, s)
	}
	return out, true, nil
}

// seqEnds parses the ends of a sequence: two integers (width is the digits
// to pad to, 0 for none) or two single characters (width -1).
func seqEnds(a, b string) (from, to, width int, ok bool) {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		digits := func(s string) int { return len(strings.TrimPrefix(s, "-")) }
		if padded(a) || padded(b) {
			width = max(digits(a), digits(b))
		}
		return x, y, width, true
	}
	ra, na := utf8.DecodeRuneInString(a)
	rb, nb := utf8.DecodeRuneInString(b)
	if na == 0 || nb == 0 || na != len(a) || nb != len(b) {
		return 0, 0, 0, false
	}
	return int(ra), int(rb), -1, true
}

func padded(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return len(s) > 1 && s[0] == '0'
}
