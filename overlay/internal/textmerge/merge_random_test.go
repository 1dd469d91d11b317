package textmerge

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// lineGen makes lines that are distinct from every other line it makes,
// so that a diff against them has exactly one minimal answer. Lines end in
// LF or CRLF (crlf is the chance of CRLF) and some carry invalid UTF-8.
type lineGen struct {
	r    *rand.Rand
	crlf float64
	n    int
}

func (g *lineGen) line(tag string) []byte {
	g.n++
	l := fmt.Sprintf("%s%d", tag, g.n)
	if g.r.IntN(6) == 0 {
		l += " \xff\xc0"
	}
	if g.r.Float64() < g.crlf {
		return []byte(l + "\r\n")
	}
	return []byte(l + "\n")
}

func (g *lineGen) lines(tag string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = g.line(tag)
	}
	return out
}

// randomBase returns up to max distinct lines; the last may lack its line
// ending.
func (g *lineGen) randomBase(max int) [][]byte {
	lines := g.lines("b", g.r.IntN(max+1))
	if n := len(lines); n > 0 && g.r.IntN(3) == 0 {
		lines[n-1] = bytes.TrimRight(lines[n-1], "\r\n")
	}
	return lines
}

// edit replaces base lines [at, at+del) with ins.
type edit struct {
	at, del int
	ins     [][]byte
}

// apply applies non-overlapping edits to base; at one position an
// insertion goes before a range that starts there.
func apply(base [][]byte, edits []edit) []byte {
	edits = slices.Clone(edits)
	slices.SortStableFunc(edits, func(a, b edit) int {
		if a.at != b.at {
			return a.at - b.at
		}
		return min(a.del, 1) - min(b.del, 1)
	})
	var out bytes.Buffer
	next := 0
	for _, e := range edits {
		out.Write(bytes.Join(base[next:e.at], nil))
		out.Write(bytes.Join(e.ins, nil))
		next = e.at + e.del
	}
	out.Write(bytes.Join(base[next:], nil))
	return out.Bytes()
}

// endsInNewline reports whether lines is empty or its last line has a
// line ending. Nothing may be inserted after a last line without one: the
// insertion would join that line instead of following it.
func endsInNewline(lines [][]byte) bool {
	n := len(lines)
	return n == 0 || bytes.HasSuffix(lines[n-1], []byte("\n"))
}

// replacement returns the lines that replace base[at:at+del]: when the
// range ends a base without a final newline, the replacement may lack one
// too.
func (g *lineGen) replacement(base [][]byte, at, del, n int, tag string) [][]byte {
	ins := g.lines(tag, n)
	if at+del == len(base) && !endsInNewline(base) && n > 0 && g.r.IntN(2) == 0 {
		ins[n-1] = bytes.TrimRight(ins[n-1], "\r\n")
	}
	return ins
}

// independentEdits returns random edits for ours and theirs that never
// interact: no shared base line, no insertion inside the other's range, no
// two insertions at one place. Edits of different sides may touch; edits
// of one side are at least one unchanged line apart, as a diff would
// report them.
func (g *lineGen) independentEdits(base [][]byte) (ours, theirs []edit) {
	n := len(base)
	edits := [2][]edit{}
	lastEnd := [2]int{-1, -1} // per side, the base position after its last edit
	insertedAt := -1
	for p := 0; p <= n; {
		s := g.r.IntN(2)
		switch k := g.r.IntN(10); {
		case k < 2 && p > lastEnd[s] && p != insertedAt && (p < n || endsInNewline(base)):
			edits[s] = append(edits[s], edit{p, 0, g.lines(fmt.Sprint("i", s, "-"), 1+g.r.IntN(3))})
			lastEnd[s], insertedAt = p, p
		case k < 5 && p < n && p > lastEnd[s]:
			del := 1 + g.r.IntN(min(3, n-p))
			edits[s] = append(edits[s], edit{p, del, g.replacement(base, p, del, g.r.IntN(3), fmt.Sprint("r", s, "-"))})
			lastEnd[s] = p + del
			p += del
		default:
			p++
		}
	}
	return edits[0], edits[1]
}

// randomMerge is the inputs of one random run: a base of up to size
// lines and two sides edited from it by edits.
type randomMerge struct {
	lines              [][]byte
	o, th              []edit
	base, ours, theirs []byte
}

func newRandomMerge(seed, run uint64, size int, edits func(*lineGen, [][]byte) ([]edit, []edit)) randomMerge {
	g := &lineGen{r: rand.New(rand.NewPCG(seed, run)), crlf: []float64{0, 0.5, 1}[run%3]}
	m := randomMerge{lines: g.randomBase(size)}
	m.o, m.th = edits(g, m.lines)
	m.base, m.ours, m.theirs = apply(m.lines, nil), apply(m.lines, m.o), apply(m.lines, m.th)
	return m
}

func TestMergeRandomIndependentEdits(t *testing.T) {
	const runs = 2000
	seed := rand.Uint64()
	for run := range uint64(runs) {
		m := newRandomMerge(seed, run, 40, (*lineGen).independentEdits)
		base, ours, theirs := m.base, m.ours, m.theirs
		want := apply(m.lines, append(m.o, m.th...))
		for name, merge := range mergers {
			if got, clean := merge(base, ours, theirs); !clean || !bytes.Equal(got, want) {
				t.Fatalf("seed %d run %d: %s(base, ours, theirs) = (%q, %v), want (%q, true)\nbase:   %q\nours:   %q\ntheirs: %q",
					seed, run, name, got, clean, want, base, ours, theirs)
			}
		}
	}
}

// TestMergeRandomIdentities checks that a side equal to base takes the
// other side's bytes exactly, and that equal sides merge to themselves,
// through both Merge and the line merge without Merge's shortcuts. Lines
// repeat here, so the diffs are ambiguous; the identities must hold
// regardless.
func TestMergeRandomIdentities(t *testing.T) {
	const runs = 2000
	seed := rand.Uint64()
	for run := range uint64(runs) {
		r := rand.New(rand.NewPCG(seed, run))
		base := repetitiveText(r)
		x := repetitiveText(r)
		if r.IntN(2) == 0 {
			x = randomEdit(r, base, "x")
		}
		for name, merge := range map[string]func(b, o, t []byte) ([]byte, bool){"Merge": Merge, "merge3": merge3} {
			for _, args := range [][3][]byte{{base, x, base}, {base, base, x}, {base, x, x}} {
				if got, clean := merge(args[0], args[1], args[2]); !clean || !bytes.Equal(got, x) {
					t.Fatalf("seed %d run %d: %s(%q, %q, %q) = (%q, %v), want (%q, true)",
						seed, run, name, args[0], args[1], args[2], got, clean, x)
				}
			}
		}
	}
}

// repetitiveText returns up to 30 lines drawn from a handful, with mixed
// endings and maybe no final newline.
func repetitiveText(r *rand.Rand) []byte {
	var b bytes.Buffer
	for range r.IntN(31) {
		b.WriteString([]string{"a", "b", "c", "", "\t}", "\xff"}[r.IntN(6)])
		b.WriteString([]string{"\n", "\n", "\r\n"}[r.IntN(3)])
	}
	if r.IntN(4) == 0 && b.Len() > 0 {
		b.Truncate(b.Len() - 1)
	}
	return b.Bytes()
}

// gitComparableEdits returns random edits for ours and theirs where every
// pair of edits of different sides either clearly interacts (shares a base
// line, an insertion strictly inside the other's range, two insertions at
// one place, or the very same edit) or is at least one unchanged line away
// from the other. On such input git merge-file and Merge must agree
// exactly; only edits that touch are treated differently.
func (g *lineGen) gitComparableEdits(base [][]byte) (ours, theirs []edit) {
	n := len(base)
	canInsert := func(p int) bool { return p < n || endsInNewline(base) }
	var edits [2][]edit
	prevEnd := -1 // base position after the previous edit of either side
	for p := 0; p <= n; p++ {
		if p <= prevEnd {
			continue
		}
		s := g.r.IntN(2)
		switch k := g.r.IntN(14); {
		case k < 2 && canInsert(p): // one side inserts
			edits[s] = append(edits[s], edit{p, 0, g.lines(fmt.Sprint("i", s, "-"), 1+g.r.IntN(2))})
			prevEnd = p
		case k == 2 && p < n: // one side replaces or deletes
			del := 1 + g.r.IntN(min(3, n-p))
			edits[s] = append(edits[s], edit{p, del, g.replacement(base, p, del, g.r.IntN(3), fmt.Sprint("r", s, "-"))})
			prevEnd = p + del
		case k == 3 && p < n: // overlapping ranges: the other side's starts inside this one's
			a := 1 + g.r.IntN(min(3, n-p))
			b := g.r.IntN(a)
			c := 1 + g.r.IntN(min(3, n-p-b))
			edits[s] = append(edits[s], edit{p, a, g.replacement(base, p, a, g.r.IntN(3), fmt.Sprint("o", s, "-"))})
			edits[1-s] = append(edits[1-s], edit{p + b, c, g.replacement(base, p+b, c, g.r.IntN(3), fmt.Sprint("o", 1-s, "-"))})
			prevEnd = max(p+a, p+b+c)
		case k == 4 && canInsert(p): // both insert at one place
			edits[s] = append(edits[s], edit{p, 0, g.lines(fmt.Sprint("j", s, "-"), 1+g.r.IntN(2))})
			edits[1-s] = append(edits[1-s], edit{p, 0, g.lines(fmt.Sprint("j", 1-s, "-"), 1+g.r.IntN(2))})
			prevEnd = p
		case k == 5 && p+1 < n: // an insertion strictly inside the other side's range
			a := 2 + g.r.IntN(min(3, n-p-1))
			at := 1 + g.r.IntN(a-1)
			edits[s] = append(edits[s], edit{p, a, g.replacement(base, p, a, g.r.IntN(3), fmt.Sprint("k", s, "-"))})
			edits[1-s] = append(edits[1-s], edit{p + at, 0, g.lines(fmt.Sprint("k", 1-s, "-"), 1+g.r.IntN(2))})
			prevEnd = p + a
		case k == 6 && p < n: // the same change on both sides
			del := g.r.IntN(min(3, n-p) + 1)
			e := edit{p, del, g.replacement(base, p, del, 1+g.r.IntN(2), "same-")}
			edits[0], edits[1] = append(edits[0], e), append(edits[1], e)
			prevEnd = p + del
		}
	}
	return edits[0], edits[1]
}

func TestMergeRandomMatchesGit(t *testing.T) {
	requireGit(t)
	const runs = 150
	seed := rand.Uint64()
	conflicts := 0
	for run := range uint64(runs) {
		m := newRandomMerge(seed, run, 30, (*lineGen).gitComparableEdits)
		base, ours, theirs := m.base, m.ours, m.theirs
		want, wantClean := gitMergeFile(t, base, ours, theirs)
		got, clean := Merge(base, ours, theirs)
		if !bytes.Equal(got, want) || clean != wantClean {
			t.Fatalf("seed %d run %d: Merge = (%q, %v), git merge-file = (%q, %v)\nbase:   %q\nours:   %q\ntheirs: %q",
				seed, run, got, clean, want, wantClean, base, ours, theirs)
		}
		if !clean {
			conflicts++
		}
	}
	if conflicts == 0 || conflicts == runs {
		t.Errorf("seed %d: %d of %d runs conflicted; the generator should give both outcomes", seed, conflicts, runs)
	}
}

func FuzzMerge(f *testing.F) {
	for _, c := range mergeCases {
		f.Add([]byte(c.base), []byte(c.ours), []byte(c.theirs))
	}
	f.Fuzz(func(t *testing.T, base, ours, theirs []byte) {
		Merge(base, ours, theirs) // must not panic
		if IsBinary(base) || IsBinary(ours) {
			return
		}
		for _, args := range [][3][]byte{{base, ours, base}, {base, base, ours}, {base, ours, ours}} {
			if got, clean := merge3(args[0], args[1], args[2]); !clean || !bytes.Equal(got, ours) {
				t.Fatalf("merge3(%q, %q, %q) = (%q, %v), want (%q, true)", args[0], args[1], args[2], got, clean, ours)
			}
		}
	})
}
