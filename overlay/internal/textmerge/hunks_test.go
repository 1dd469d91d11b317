package textmerge

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestApplyHunks: applying every change of every hunk gives the new
// text; applying none gives the old; applying a subset gives a text
// whose diff from old has exactly those changes.
func TestApplyHunks(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 1))
		old := hunkText(r, 40)
		new := mutate(r, old)
		var all []Change
		for _, h := range Hunks(old, new) {
			all = append(all, h.Changes...)
		}
		if got := Apply(old, new, all); !bytes.Equal(got, new) {
			t.Fatalf("seed %d: all changes: got %q, want %q", seed, got, new)
		}
		if got := Apply(old, new, nil); !bytes.Equal(got, old) {
			t.Fatalf("seed %d: no change: got %q", seed, got)
		}
		var some []Change
		for i, c := range all {
			if i%2 == 0 {
				some = append(some, c)
			}
		}
		mid := Apply(old, new, some)
		var again []Change
		for _, h := range Hunks(old, mid) {
			again = append(again, h.Changes...)
		}
		if len(again) > len(some) {
			t.Fatalf("seed %d: %d changes chosen, the result differs from old by %d", seed, len(some), len(again))
		}
		// What is left goes from mid to new.
		var rest []Change
		for _, h := range Hunks(mid, new) {
			rest = append(rest, h.Changes...)
		}
		if got := Apply(mid, new, rest); !bytes.Equal(got, new) {
			t.Fatalf("seed %d: the rest does not lead to new", seed)
		}
	}
}

// TestHunksMatchUnified: the hunks' text is Unified's, and a hunk's
// changes say which lines change.
func TestHunksMatchUnified(t *testing.T) {
	old := []byte("a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\n")
	new := []byte("a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nL\nm\nn\nz")
	hs := Hunks(old, new)
	var b strings.Builder
	for _, h := range hs {
		b.WriteString(h.Text)
	}
	u := Unified("x", "x", old, new, true, true)
	if !strings.HasSuffix(u, b.String()) {
		t.Fatalf("hunks:\n%s\nunified:\n%s", b.String(), u)
	}
	if len(hs) != 2 || len(hs[1].Changes) != 2 {
		t.Fatalf("hunks: %+v", hs)
	}
	c := hs[0].Changes[0]
	if o, n := ChangeLines(old, new, c); string(o) != "b\n" || string(n) != "B\n" {
		t.Fatalf("change lines %q %q", o, n)
	}
	got := ChangeText(old, new, hs[1].Changes[0], hs[0].Changes[0].OldEnd, hs[1].Changes[1].OldStart)
	want := "@@ -9,6 +9,6 @@\n i\n j\n k\n-l\n+L\n m\n n\n"
	if got != want {
		t.Fatalf("change text:\n%q\nwant\n%q", got, want)
	}
}

func hunkText(r *rand.Rand, n int) []byte {
	var b bytes.Buffer
	for range r.IntN(n) + 1 {
		fmt.Fprintf(&b, "line %d\n", r.IntN(8))
	}
	return b.Bytes()
}

func mutate(r *rand.Rand, old []byte) []byte {
	lines := splitLines(old)
	var b bytes.Buffer
	for _, l := range lines {
		switch r.IntN(6) {
		case 0: // dropped
		case 1:
			fmt.Fprintf(&b, "new %d\n", r.IntN(8))
			b.Write(l)
		case 2:
			fmt.Fprintf(&b, "changed %d\n", r.IntN(8))
		default:
			b.Write(l)
		}
	}
	if r.IntN(4) == 0 {
		b.WriteString("tail without newline")
	}
	return b.Bytes()
}
