package textmerge

import (
	"bytes"
	"strings"

	"znkr.io/diff"
	"znkr.io/diff/textdiff"
)

// Change is one run of changed lines between two texts, without
// context: old lines [OldStart, OldEnd) become new lines [NewStart,
// NewEnd) (0-based). Hunks are made of changes; a hunk split as
// `git add -p` splits it falls into its changes.
type Change struct {
	OldStart, OldEnd int
	NewStart, NewEnd int
}

// Hunk is one hunk of Unified's output: Text is exactly what Unified
// prints for it (the "@@" line and its lines), Changes what it is made
// of, in order.
type Hunk struct {
	Text    string
	Changes []Change
}

// Hunks returns the hunks of Unified's diff from old to new (3 lines of
// context, git's function names), nil when the texts are equal or either
// is binary.
func Hunks(old, new []byte) []Hunk {
	if bytes.Equal(old, new) || IsBinary(old) || IsBinary(new) {
		return nil
	}
	fn := funcLine{lines: splitLines(old), limit: -1}
	var out []Hunk
	for _, h := range textdiff.Hunks(old, new, diff.Context(contextLines), textdiff.IndentHeuristic()) {
		var b strings.Builder
		b.WriteString("@@ -")
		writeRange(&b, h.LineNoX, h.EndLineNoX-h.LineNoX)
		b.WriteString(" +")
		writeRange(&b, h.LineNoY, h.EndLineNoY-h.LineNoY)
		b.WriteString(" @@")
		if name := fn.before(h.LineNoX); len(name) > 0 {
			b.WriteByte(' ')
			b.Write(name)
		}
		b.WriteByte('\n')
		x, y := h.LineNoX, h.LineNoY
		var changes []Change
		inChange := false
		for _, e := range h.Edits {
			if e.Op == diff.Match {
				inChange = false
				x, y = x+1, y+1
			} else {
				if !inChange {
					changes = append(changes, Change{OldStart: x, OldEnd: x, NewStart: y, NewEnd: y})
					inChange = true
				}
				c := &changes[len(changes)-1]
				if e.Op == diff.Delete {
					x++
					c.OldEnd = x
				} else {
					y++
					c.NewEnd = y
				}
			}
			writeEditLine(&b, e.Op, e.Line)
		}
		out = append(out, Hunk{Text: b.String(), Changes: changes})
	}
	return out
}

// writeEditLine writes one line of a hunk with its prefix, and git's
// marker after a line without a line ending.
func writeEditLine(b *strings.Builder, op diff.Op, line []byte) {
	switch op {
	case diff.Delete:
		b.WriteByte('-')
	case diff.Insert:
		b.WriteByte('+')
	default:
		b.WriteByte(' ')
	}
	b.Write(line)
	if line[len(line)-1] != '\n' {
		b.WriteString(noNewline)
	}
}

// ChangeText shows change c alone, as `git add -p` shows a hunk it
// split: an "@@" line and the changed lines with up to 3 lines of
// context, none of which belong to another change (prev and next are
// the old lines where the neighbouring changes end and start: -1 and
// len(old lines) when there are none).
func ChangeText(old, new []byte, c Change, prevEnd, nextStart int) string {
	ol, nl := splitLines(old), splitLines(new)
	if nextStart < 0 || nextStart > len(ol) {
		nextStart = len(ol)
	}
	lo := max(c.OldStart-contextLines, prevEnd, 0)
	hi := min(c.OldEnd+contextLines, nextStart)
	before, after := c.OldStart-lo, hi-c.OldEnd
	var b strings.Builder
	b.WriteString("@@ -")
	writeRange(&b, lo, hi-lo)
	b.WriteString(" +")
	writeRange(&b, c.NewStart-before, before+(c.NewEnd-c.NewStart)+after)
	b.WriteString(" @@\n")
	for _, l := range ol[lo:c.OldStart] {
		writeEditLine(&b, diff.Match, l)
	}
	for _, l := range ol[c.OldStart:c.OldEnd] {
		writeEditLine(&b, diff.Delete, l)
	}
	for _, l := range nl[c.NewStart:c.NewEnd] {
		writeEditLine(&b, diff.Insert, l)
	}
	for _, l := range ol[c.OldEnd:hi] {
		writeEditLine(&b, diff.Match, l)
	}
	return b.String()
}

// ChangeLines returns the old and new lines change c replaces and
// brings, joined.
func ChangeLines(old, new []byte, c Change) (oldLines, newLines []byte) {
	ol, nl := splitLines(old), splitLines(new)
	return bytes.Join(ol[c.OldStart:c.OldEnd], nil), bytes.Join(nl[c.NewStart:c.NewEnd], nil)
}

// Apply returns old with the given changes (from Hunks(old, new), in
// order) made: the lines of each replaced by its new lines from new;
// every other line is old's.
func Apply(old, new []byte, changes []Change) []byte {
	ol, nl := splitLines(old), splitLines(new)
	var out bytes.Buffer
	at := 0
	for _, c := range changes {
		for _, l := range ol[at:c.OldStart] {
			out.Write(l)
		}
		for _, l := range nl[c.NewStart:c.NewEnd] {
			out.Write(l)
		}
		at = c.OldEnd
	}
	for _, l := range ol[at:] {
		out.Write(l)
	}
	return out.Bytes()
}
