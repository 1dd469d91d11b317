package textmerge

import (
	"bytes"
	"slices"

	"znkr.io/diff"
	"znkr.io/diff/textdiff"
)

// Conflict markers, as git merge-file --diff3 -L ours -L base -L theirs
// writes them.
const (
	markerOurs   = "<<<<<<< ours"
	markerBase   = "||||||| base"
	markerSep    = "======="
	markerTheirs = ">>>>>>> theirs"
)

// Merge merges ours and theirs, both derived from base, line by line.
//
// A clean merge returns (merged, true); merged is built only from the
// inputs' own bytes, so line endings (CRLF, LF, mixed), a missing final
// newline and invalid UTF-8 come through unchanged. Changes of both sides
// merge cleanly when their base line ranges do not overlap, including
// ranges that only touch (unlike git, which conflicts on adjacent lines);
// identical changes on both sides are taken once.
//
// A conflict returns (text, false): the merge with every conflicting
// region written as git merge-file --diff3 writes it, between the lines
// "<<<<<<< ours", "||||||| base", "=======" and ">>>>>>> theirs" (ending
// in CRLF where git would use CRLF). Both sides inserting different lines
// at the same place, or one side inserting inside a range the other side
// changed, is a conflict.
//
// If any input is binary (see IsBinary) there is no line merge: the merge
// is clean when ours and theirs are equal or one of them equals base (the
// other wins), and otherwise Merge returns (nil, false).
//
// The result never aliases the inputs.
func Merge(base, ours, theirs []byte) ([]byte, bool) {
	switch {
	case bytes.Equal(ours, theirs), bytes.Equal(base, theirs):
		return bytes.Clone(ours), true
	case bytes.Equal(base, ours):
		return bytes.Clone(theirs), true
	case IsBinary(base) || IsBinary(ours) || IsBinary(theirs):
		return nil, false
	}
	return merge3(base, ours, theirs)
}

// side names the two derived versions.
type side int

const (
	sideOurs side = iota
	sideTheirs
)

// change is one hunk of a side's diff against base: base lines
// [baseStart, baseEnd) became the side's lines [start, end). An insertion
// has baseStart == baseEnd. Two changes of one side are always separated
// by at least one line both keep.
type change struct {
	side               side
	baseStart, baseEnd int
	start, end         int
}

func (c change) insertion() bool { return c.baseStart == c.baseEnd }

// changes diffs base against a side and returns its hunks in base order.
func changes(base, derived []byte, s side) []change {
	hunks := textdiff.Hunks(base, derived, diff.Context(0))
	cs := make([]change, len(hunks))
	for i, h := range hunks {
		cs[i] = change{s, h.LineNoX, h.EndLineNoX, h.LineNoY, h.EndLineNoY}
	}
	return cs
}

// before orders changes by base position; at one position an insertion
// comes before a change that replaces lines there, and ours before theirs.
func before(a, b change) int {
	switch {
	case a.baseStart != b.baseStart:
		return a.baseStart - b.baseStart
	case a.insertion() != b.insertion():
		if a.insertion() {
			return -1
		}
		return 1
	}
	return int(a.side) - int(b.side)
}

// interacts reports whether two changes of different sides touch the same
// base lines, which makes them one region to resolve: ranges that share a
// line, an insertion strictly inside the other's range, or two insertions
// at one place. Ranges that only meet, or an insertion at the edge of the
// other's range, do not interact.
func interacts(a, b change) bool {
	switch {
	case a.insertion() && b.insertion():
		return a.baseStart == b.baseStart
	case a.insertion():
		return b.baseStart < a.baseStart && a.baseStart < b.baseEnd
	case b.insertion():
		return a.baseStart < b.baseStart && b.baseStart < a.baseEnd
	}
	return a.baseStart < b.baseEnd && b.baseStart < a.baseEnd
}

// merge3 is the line merge behind Merge, without its shortcuts.
//
// It walks both sides' hunks in base order and groups hunks into regions:
// a hunk joins the current region when it interacts with the region's
// latest hunk of the other side (the only one it can reach, since one
// side's hunks are ordered and never touch). A region of one hunk takes
// that side's lines. A region with both sides is resolved by comparing
// each side's version of the region's whole base span: equal versions
// merge cleanly, anything else conflicts. With minimal diffs neither
// version can equal base; if the diff heuristics ever return a longer
// diff where one does, the region conflicts, which is safe.
func merge3(base, ours, theirs []byte) ([]byte, bool) {
	lines := [2][][]byte{sideOurs: splitLines(ours), sideTheirs: splitLines(theirs)}
	baseLines := splitLines(base)
	all := append(changes(base, ours, sideOurs), changes(base, theirs, sideTheirs)...)
	slices.SortFunc(all, before)

	var out bytes.Buffer
	out.Grow(max(len(ours), len(theirs)))
	clean := true
	next := 0 // the first base line not yet written or replaced
	for i := 0; i < len(all); {
		latest := [2]int{-1, -1} // per side, the region's latest hunk
		latest[all[i].side] = i
		lo, hi := all[i].baseStart, all[i].baseEnd
		j := i + 1
		for ; j < len(all); j++ {
			c := all[j]
			k := latest[1-c.side]
			if k < 0 || !interacts(all[k], c) {
				break
			}
			latest[c.side] = j
			hi = max(hi, c.baseEnd)
		}
		writeLines(&out, baseLines[next:lo], "")
		next = hi

		region := all[i:j]
		if len(region) == 1 {
			c := region[0]
			writeLines(&out, lines[c.side][c.start:c.end], "")
			i = j
			continue
		}
		oLo, oHi := span(region, sideOurs, lo, hi)
		tLo, tHi := span(region, sideTheirs, lo, hi)
		o, t := lines[sideOurs][oLo:oHi], lines[sideTheirs][tLo:tHi]
		if linesEqual(o, t) {
			writeLines(&out, o, "")
		} else {
			clean = false
			nl := markerEOL(lines[sideOurs], oLo, lines[sideTheirs], tLo, baseLines)
			out.WriteString(markerOurs + nl)
			writeLines(&out, o, nl)
			out.WriteString(markerBase + nl)
			writeLines(&out, baseLines[lo:hi], nl)
			out.WriteString(markerSep + nl)
			writeLines(&out, t, nl)
			out.WriteString(markerTheirs + nl)
		}
		i = j
	}
	writeLines(&out, baseLines[next:], "")
	return out.Bytes(), clean
}

// span maps the base span [lo, hi) of a region to the lines of side s that
// stand for it. Lines outside the side's hunks are unchanged, so the edges
// shift by the same amount as the nearest hunk's.
func span(region []change, s side, lo, hi int) (start, end int) {
	first, last := -1, -1
	for i, c := range region {
		if c.side == s {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	f, l := region[first], region[last]
	return f.start - (f.baseStart - lo), l.end + (hi - l.baseEnd)
}

// writeLines writes lines in order. If nl is not empty and the last line
// has no line ending, nl is added so that a conflict marker after it
// starts a line of its own.
func writeLines(out *bytes.Buffer, lines [][]byte, nl string) {
	for _, l := range lines {
		out.Write(l)
	}
	if n := len(lines); n > 0 && nl != "" {
		if l := lines[n-1]; l[len(l)-1] != '\n' {
			out.WriteString(nl)
		}
	}
}

// markerEOL picks the line ending of conflict markers as git's
// is_cr_needed does: CRLF only if neither side's line before the conflict
// (or its first line) ends in a bare LF and base's first line ends in CRLF.
func markerEOL(ours [][]byte, oStart int, theirs [][]byte, tStart int, base [][]byte) string {
	if eolAt(ours, max(oStart-1, 0)) != eolLF &&
		eolAt(theirs, max(tStart-1, 0)) != eolLF &&
		eolAt(base, 0) == eolCRLF {
		return "\r\n"
	}
	return "\n"
}

func linesEqual(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, bytes.Equal)
}
