package mcp

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/draftfs/draftfs/protocol/mcp/internal/reference"
)

// How search_content ranks its hits and writes its answer.

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
