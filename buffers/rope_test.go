package buffers

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// tokens are the pieces random texts are made of: the characters that
// trip up position handling, and the byte sequences that must not be cut.
var tokens = []string{
	"a", "b", "xyz", " ", "\t", "func main() {", "\n", "\n", "\r\n", "\r", "é", "中", "😀",
	"\xff", "\xe2\x82", "\x82", "\xac", "\xf0\x9f", "\x98\x80", "\xef\xbf\xbd",
}

func randText(r *rand.Rand, n int) []byte {
	var b []byte
	for range n {
		b = append(b, tokens[r.IntN(len(tokens))]...)
	}
	return b
}

// randEdit picks a range around the text, mostly inside it, sometimes
// past its ends, with a mostly short insertion.
func randEdit(r *rand.Rand, text []byte) Edit {
	lines := len(bytes.Split(text, []byte{'\n'})) + 1
	randPos := func() Position {
		p := pos(r.IntN(lines+1), r.IntN(8))
		if r.IntN(4) == 0 {
			p.Character = r.IntN(200)
		}
		return p
	}
	s, e := randPos(), randPos()
	if e.before(s) {
		s, e = e, s
	}
	if r.IntN(3) == 0 {
		e = s // insertion
	}
	n := r.IntN(4)
	if r.IntN(20) == 0 {
		n = 200 + r.IntN(600)
	}
	return Edit{Range: Range{Start: s, End: e}, Text: string(randText(r, n))}
}

func TestDifferential(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	rounds := 60
	if testing.Short() {
		rounds = 10
	}
	for round := range rounds {
		c, tokens := tinyChunking, r.IntN(3000)
		switch round % 5 {
		case 1, 3:
			c = chunking{min: 64, max: 256}
		case 4:
			c, tokens = defaultChunking, 20000
		}
		text := randText(r, tokens)
		root := c.build(bytes.Clone(text))
		checkRope(t, c, root)
		for step := range 200 {
			enc := Encoding(r.IntN(2))
			edits := make([]Edit, 1+r.IntN(3))
			for i := range edits {
				edits[i] = randEdit(r, text)
			}
			want, err := refApply(text, enc, edits)
			if err != nil {
				t.Fatalf("seed %d round %d step %d: reference: %v", seed, round, step, err)
			}
			got, err := c.applyEdits(root, enc, edits)
			if err != nil {
				t.Fatalf("seed %d round %d step %d: %v", seed, round, step, err)
			}
			if g := flatten(got); !bytes.Equal(g, want) {
				t.Fatalf("seed %d round %d step %d: %v %+v on %q:\n got %q\nwant %q", seed, round, step, enc, edits, text, g, want)
			}
			checkRope(t, c, got)
			if !bytes.Equal(flatten(root), text) {
				t.Fatalf("seed %d round %d step %d: editing changed the old rope", seed, round, step)
			}
			root, text = got, want
		}
	}
}

// TestRebaseAndFlatten checks that a rope rebased onto its flat text is
// the same rope, and that editing it leaves the flat text alone.
func TestRebaseAndFlatten(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	text := randText(r, 2000)
	root := tinyChunking.build(bytes.Clone(text))
	root = tinyChunking.replace(root, 10, 20, "edited")
	flat := flatten(root)
	rebased := rebase(root, flat, 0)
	checkRope(t, tinyChunking, rebased)
	if !bytes.Equal(flatten(rebased), flat) {
		t.Fatal("rebase changed the text")
	}
	keep := bytes.Clone(flat)
	edited := tinyChunking.replace(rebased, 5, 500, "x")
	checkRope(t, tinyChunking, edited)
	if !bytes.Equal(flat, keep) {
		t.Fatal("editing a rebased rope wrote into the snapshot it aliases")
	}
}

func FuzzEdit(f *testing.F) {
	f.Add([]byte("hello\nworld\n"), []byte{0, 0, 1, 0, 3, 2, 'h', 'i'})
	f.Add([]byte("a\r\nb\r\nc"), []byte{1, 0, 9, 1, 0, 1, '\n', 1, 1, 0, 0, 0, 0, 1, '\r'})
	f.Add([]byte("a😀b中\xffé"), []byte{1, 0, 2, 0, 5, 0, 0, 0, 3, 0, 7, 2, 0xf0, 0x9f})
	f.Add([]byte("\xe2x\xac"), []byte{1, 0, 1, 0, 2, 1, 0x82})
	f.Add([]byte(""), []byte{0, 3, 3, 3, 3, 4, '\r', '\n', '\r', 'x'})
	f.Fuzz(func(t *testing.T, text, script []byte) {
		for _, c := range []chunking{tinyChunking, defaultChunking} {
			root := c.build(bytes.Clone(text))
			cur := bytes.Clone(text)
			// Each edit takes six bytes (encoding, start, end) and then as
			// many bytes of text as the sixth says.
			for s := script; len(s) >= 6; {
				enc := Encoding(s[0] & 1)
				start := pos(int(s[1]%8), int(s[2]%16))
				end := pos(start.Line+int(s[3]%3), int(s[4]%16))
				n := min(int(s[5]%8), len(s)-6)
				edits := []Edit{{Range: Range{Start: start, End: end}, Text: string(s[6 : 6+n])}}
				s = s[6+n:]
				want, wantErr := refApply(cur, enc, edits)
				got, err := c.applyEdits(root, enc, edits)
				if (err != nil) != (wantErr != nil) || err != nil && !errors.Is(err, ErrBadRange) {
					t.Fatalf("%v %+v on %q: error %v, reference %v", enc, edits, cur, err, wantErr)
				}
				if err != nil {
					continue
				}
				if g := flatten(got); !bytes.Equal(g, want) {
					t.Fatalf("%v %+v on %q:\n got %q\nwant %q", enc, edits, cur, g, want)
				}
				checkRope(t, c, got)
				root, cur = got, want
			}
		}
	})
}
