package reference

import (
	"strconv"
	"strings"
)

// The reference server shows edit_file's changes with the npm package
// diff's createTwoFilesPatch(path, path, old, new, "original",
// "modified"). Clients and prompts read that exact text, so this file
// produces the same bytes: the same line tokens, the same Myers search
// with the same tie-breaks (which decide where an ambiguous change goes),
// 4 lines of context, and the same headers.

// diffContext is the lines of context around each hunk.
const diffContext = 4

// change is a run of equal, added or removed lines.
type change struct {
	count          int
	added, removed bool
	lines          []string // with their line ends
}

// run is a persistent list of changes, newest first, shared between the
// search paths that extend it.
type run struct {
	count          int
	added, removed bool
	prev           *run
}

// searchPath is the furthest point reached on one diagonal.
type searchPath struct {
	oldPos int
	last   *run
}

// UnifiedDiff returns createTwoFilesPatch(name, name, before, after,
// "original", "modified"), with CRLF line ends turned into LF first.
func UnifiedDiff(name, before, after string) string {
	before = strings.ReplaceAll(before, "\r\n", "\n")
	after = strings.ReplaceAll(after, "\r\n", "\n")
	var b strings.Builder
	b.WriteString("Index: " + name + "\n")
	b.WriteString("===================================================================\n")
	b.WriteString("--- " + name + "\toriginal\n")
	b.WriteString("+++ " + name + "\tmodified\n")
	for _, h := range hunks(diffLines(lineTokens(before), lineTokens(after))) {
		oldStart, newStart := h.oldStart, h.newStart
		if h.oldLines == 0 {
			oldStart--
		}
		if h.newLines == 0 {
			newStart--
		}
		b.WriteString("@@ -" + strconv.Itoa(oldStart) + "," + strconv.Itoa(h.oldLines) +
			" +" + strconv.Itoa(newStart) + "," + strconv.Itoa(h.newLines) + " @@\n")
		for _, l := range h.lines {
			if s, ok := strings.CutSuffix(l, "\n"); ok {
				b.WriteString(s + "\n")
			} else {
				b.WriteString(l + "\n\\ No newline at end of file\n")
			}
		}
	}
	return b.String()
}

// lineTokens splits text into lines that keep their "\n" or "\r\n"; a
// final empty line is not a token.
func lineTokens(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// diffLines is the Myers search of jsdiff's Diff.diff over line tokens.
func diffLines(a, b []string) []change {
	oldLen, newLen := len(a), len(b)
	off := oldLen + newLen + 1 // diagonal d is best[d+off]
	best := make([]*searchPath, 2*off+1)
	common := func(p *searchPath, d int) int {
		oldPos := p.oldPos
		newPos := oldPos - d
		n := 0
		for newPos+1 < newLen && oldPos+1 < oldLen && a[oldPos+1] == b[newPos+1] {
			newPos++
			oldPos++
			n++
		}
		if n > 0 {
			p.last = &run{count: n, prev: p.last}
		}
		p.oldPos = oldPos
		return newPos
	}
	extend := func(p *searchPath, added, removed bool, oldInc int) *searchPath {
		if l := p.last; l != nil && l.added == added && l.removed == removed {
			return &searchPath{oldPos: p.oldPos + oldInc, last: &run{count: l.count + 1, added: added, removed: removed, prev: l.prev}}
		}
		return &searchPath{oldPos: p.oldPos + oldInc, last: &run{count: 1, added: added, removed: removed, prev: p.last}}
	}
	start := &searchPath{oldPos: -1}
	best[off] = start
	if newPos := common(start, 0); start.oldPos+1 >= oldLen && newPos+1 >= newLen {
		return changes(start.last, a, b)
	}
	minD, maxD := -off, off
	for edit := 1; edit <= oldLen+newLen; edit++ {
		for d := max(minD, -edit); d <= min(maxD, edit); d += 2 {
			removePath, addPath := best[d-1+off], best[d+1+off]
			if removePath != nil {
				best[d-1+off] = nil
			}
			canAdd := false
			if addPath != nil {
				pos := addPath.oldPos - d
				canAdd = 0 <= pos && pos < newLen
			}
			canRemove := removePath != nil && removePath.oldPos+1 < oldLen
			if !canAdd && !canRemove {
				best[d+off] = nil
				continue
			}
			var p *searchPath
			if !canRemove || (canAdd && removePath.oldPos < addPath.oldPos) {
				p = extend(addPath, true, false, 0)
			} else {
				p = extend(removePath, false, true, 1)
			}
			newPos := common(p, d)
			if p.oldPos+1 >= oldLen && newPos+1 >= newLen {
				return changes(p.last, a, b)
			}
			best[d+off] = p
			if p.oldPos+1 >= oldLen {
				maxD = min(maxD, d-1)
			}
			if newPos+1 >= newLen {
				minD = max(minD, d+1)
			}
		}
	}
	return nil // not reached: oldLen+newLen edits always suffice
}

// changes turns a run list into changes in order, with their lines.
func changes(last *run, a, b []string) []change {
	var rs []*run
	for r := last; r != nil; r = r.prev {
		rs = append(rs, r)
	}
	out := make([]change, 0, len(rs))
	oldPos, newPos := 0, 0
	for i := len(rs) - 1; i >= 0; i-- {
		r := rs[i]
		c := change{count: r.count, added: r.added, removed: r.removed}
		if r.removed {
			c.lines = a[oldPos : oldPos+r.count]
			oldPos += r.count
		} else {
			c.lines = b[newPos : newPos+r.count]
			newPos += r.count
			if !r.added {
				oldPos += r.count
			}
		}
		out = append(out, c)
	}
	return out
}

type hunk struct {
	oldStart, oldLines, newStart, newLines int
	lines                                  []string // "+", "-" or " " and the line with its end
}

// hunks groups changes into hunks with diffContext lines around them, as
// jsdiff's structuredPatch does (hunks closer than twice the context
// merge).
func hunks(cs []change) []hunk {
	cs = append(cs, change{}) // sentinel: closes the last hunk
	prefixed := func(sign string, lines []string) []string {
		out := make([]string, len(lines))
		for i, l := range lines {
			out[i] = sign + l
		}
		return out
	}
	var out []hunk
	var cur []string
	oldStart, newStart, oldLine, newLine := 0, 0, 1, 1
	for i, c := range cs {
		if c.added || c.removed {
			if oldStart == 0 {
				oldStart, newStart = oldLine, newLine
				if i > 0 {
					prev := cs[i-1].lines
					cur = prefixed(" ", prev[max(0, len(prev)-diffContext):])
					oldStart -= len(cur)
					newStart -= len(cur)
				}
			}
			sign := "-"
			if c.added {
				sign = "+"
			}
			cur = append(cur, prefixed(sign, c.lines)...)
			if c.added {
				newLine += len(c.lines)
			} else {
				oldLine += len(c.lines)
			}
			continue
		}
		if oldStart != 0 {
			if len(c.lines) <= 2*diffContext && i < len(cs)-2 {
				cur = append(cur, prefixed(" ", c.lines)...)
			} else {
				n := min(len(c.lines), diffContext)
				cur = append(cur, prefixed(" ", c.lines[:n])...)
				out = append(out, hunk{
					oldStart: oldStart, oldLines: oldLine - oldStart + n,
					newStart: newStart, newLines: newLine - newStart + n,
					lines: cur,
				})
				oldStart, newStart, cur = 0, 0, nil
			}
		}
		oldLine += len(c.lines)
		newLine += len(c.lines)
	}
	return out
}
