package buffers

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func pos(line, char int) Position { return Position{Line: line, Character: char} }

func ed(sl, sc, el, ec int, text string) Edit {
	return Edit{Range: Range{Start: pos(sl, sc), End: pos(el, ec)}, Text: text}
}

// tinyChunking puts chunk boundaries every few bytes, so even short table
// texts exercise edits across and next to them.
var tinyChunking = chunking{min: 8, max: 32}

var editTests = []struct {
	name  string
	text  string
	enc   Encoding
	edits []Edit
	want  string
	err   error
}{
	{"insert into empty", "", UTF16, []Edit{ed(0, 0, 0, 0, "hello")}, "hello", nil},
	{"insert at end without final newline", "ab\ncd", UTF16, []Edit{ed(1, 2, 1, 2, "!")}, "ab\ncd!", nil},
	{"line past the last clamps to the end", "ab\ncd", UTF16, []Edit{ed(9, 0, 9, 4, "X")}, "ab\ncdX", nil},
	{"character past the line clamps to its end", "ab\ncd", UTF8, []Edit{ed(0, 9, 0, 99, "X")}, "abX\ncd", nil},
	{"delete across lines", "ab\ncd\nef", UTF16, []Edit{ed(0, 1, 2, 1, "")}, "af", nil},
	{"replace with several lines", "abc", UTF16, []Edit{ed(0, 1, 0, 2, "1\n2")}, "a1\n2c", nil},
	{"final newline kept", "a\n", UTF16, []Edit{ed(0, 1, 0, 1, "b")}, "ab\n", nil},
	{"empty last line after final newline", "a\n", UTF16, []Edit{ed(1, 0, 1, 0, "X")}, "a\nX", nil},
	{"delete everything", "abc\n", UTF16, []Edit{ed(0, 0, 1, 0, "")}, "", nil},
	{"whole text through an oversized range", "abc\ndef", UTF8, []Edit{ed(0, 0, 99, 0, "new")}, "new", nil},
	{"edits apply in order", "abc", UTF16, []Edit{ed(0, 0, 0, 1, ""), ed(0, 0, 0, 1, "")}, "c", nil},
	{"later edit sees earlier lines", "ab", UTF16, []Edit{ed(0, 1, 0, 1, "\n"), ed(1, 1, 1, 1, "X")}, "a\nbX", nil},

	// Multi-byte text: é is 2 bytes/1 unit, 中 3 bytes/1 unit, 😀 4 bytes/2 units.
	{"utf-16 counts é as one unit", "héllo", UTF16, []Edit{ed(0, 2, 0, 3, "")}, "hélo", nil},
	{"utf-8 counts é as two bytes", "héllo", UTF8, []Edit{ed(0, 3, 0, 4, "")}, "hélo", nil},
	{"utf-8 inside é moves to its start", "héllo", UTF8, []Edit{ed(0, 2, 0, 2, "X")}, "hXéllo", nil},
	{"utf-16 after an emoji", "a😀b", UTF16, []Edit{ed(0, 3, 0, 4, "")}, "a😀", nil},
	{"utf-16 inside a surrogate pair moves to its start", "a😀b", UTF16, []Edit{ed(0, 2, 0, 2, "X")}, "aX😀b", nil},
	{"utf-16 range from inside a pair", "a😀b", UTF16, []Edit{ed(0, 2, 0, 3, "")}, "ab", nil},
	{"utf-16 range ending inside a pair", "a😀b", UTF16, []Edit{ed(0, 0, 0, 2, "")}, "😀b", nil},
	{"utf-8 inside an emoji moves to its start", "a😀b", UTF8, []Edit{ed(0, 3, 0, 6, "")}, "a", nil},
	{"utf-16 CJK", "中文字", UTF16, []Edit{ed(0, 1, 0, 2, "")}, "中字", nil},
	{"utf-8 CJK", "中文字", UTF8, []Edit{ed(0, 4, 0, 6, "")}, "中字", nil},
	{"utf-16 on the second line", "😀\n😀x", UTF16, []Edit{ed(1, 2, 1, 3, "y")}, "😀\n😀y", nil},
	{"insert multibyte", "ab", UTF16, []Edit{ed(0, 1, 0, 1, "中😀")}, "a中😀b", nil},

	// CRLF: "\r\n" ends a line; no position falls between "\r" and "\n".
	{"crlf: past the end stops before \\r", "ab\r\ncd\r\n", UTF16, []Edit{ed(0, 5, 0, 5, "X")}, "abX\r\ncd\r\n", nil},
	{"crlf: delete a line", "ab\r\ncd\r\nef", UTF16, []Edit{ed(0, 0, 1, 0, "")}, "cd\r\nef", nil},
	{"crlf: second line", "ab\r\ncd", UTF8, []Edit{ed(1, 1, 1, 1, "X")}, "ab\r\ncXd", nil},
	{"crlf: join lines", "ab\r\ncd", UTF16, []Edit{ed(0, 2, 1, 0, "")}, "abcd", nil},
	{"crlf: end of line to end of line", "ab\r\ncd\r\n", UTF16, []Edit{ed(0, 9, 1, 9, "")}, "ab\r\n", nil},
	{"lone cr ends a line", "ab\rcd", UTF16, []Edit{ed(1, 0, 1, 0, "X")}, "ab\rXcd", nil},
	{"lone cr: past the end stops before it", "ab\rcd", UTF8, []Edit{ed(0, 9, 0, 9, "X")}, "abX\rcd", nil},
	{"trailing lone cr", "a\r", UTF16, []Edit{ed(1, 0, 1, 0, "X")}, "a\rX", nil},
	{"inserting \\n after a lone \\r makes one crlf", "a\rb", UTF16,
		[]Edit{ed(1, 0, 1, 0, "\n"), ed(1, 0, 1, 0, "X")}, "a\r\nXb", nil},
	{"inserting \\r before \\n makes one crlf", "a\nb", UTF16,
		[]Edit{ed(0, 1, 0, 1, "\r"), ed(1, 0, 1, 0, "X"), ed(2, 0, 2, 0, "Y")}, "a\r\nXbY", nil},
	{"\\n then crlf is two lines", "a\n\r\nb", UTF16, []Edit{ed(2, 0, 2, 0, "X")}, "a\n\r\nXb", nil},
	{"\\r\\r\\n is two lines", "a\r\r\nb", UTF16, []Edit{ed(1, 0, 1, 0, "X"), ed(2, 0, 2, 0, "Y")}, "a\rX\r\nYb", nil},

	// Invalid UTF-8 is kept; each invalid byte is one character.
	{"utf-16 invalid byte is one unit", "a\xffb", UTF16, []Edit{ed(0, 2, 0, 3, "")}, "a\xff", nil},
	{"utf-8 invalid byte", "a\xffb", UTF8, []Edit{ed(0, 1, 0, 2, "")}, "ab", nil},
	{"truncated sequence is bytes", "\xe2\x82x", UTF16, []Edit{ed(0, 2, 0, 3, "")}, "\xe2\x82", nil},
	{"utf-8 inside a truncated sequence stays", "\xe2\x82x", UTF8, []Edit{ed(0, 1, 0, 1, "Y")}, "\xe2Y\x82x", nil},
	{"edit completing a sequence", "\xe2x\xac", UTF16, []Edit{ed(0, 1, 0, 2, "\x82"), ed(0, 1, 0, 1, "Z")}, "€Z", nil},
	{"literal U+FFFD is one valid rune", "\xef\xbf\xbdx", UTF8, []Edit{ed(0, 1, 0, 1, "Y")}, "Y\xef\xbf\xbdx", nil},

	// Errors leave the text alone.
	{"start after end", "abc", UTF16, []Edit{ed(0, 2, 0, 1, "X")}, "abc", ErrBadRange},
	{"start line after end line", "a\nb", UTF16, []Edit{ed(1, 0, 0, 1, "X")}, "a\nb", ErrBadRange},
	{"inverted before clamping", "ab", UTF16, []Edit{ed(0, 9, 0, 5, "X")}, "ab", ErrBadRange},
	{"negative line", "abc", UTF16, []Edit{ed(-1, 0, 0, 0, "X")}, "abc", ErrBadRange},
	{"negative character", "abc", UTF8, []Edit{ed(0, 0, 0, -1, "X")}, "abc", ErrBadRange},
	{"bad edit later in the batch", "abc", UTF16, []Edit{ed(0, 0, 0, 1, ""), ed(0, 1, 0, 0, "")}, "abc", ErrBadRange},
	{"unknown encoding", "abc", Encoding(7), []Edit{ed(0, 0, 0, 0, "X")}, "abc", ErrBadRange},
}

func TestEditTable(t *testing.T) {
	for _, tc := range editTests {
		t.Run(tc.name, func(t *testing.T) {
			ref, refErr := refApply([]byte(tc.text), tc.enc, tc.edits)
			if !errors.Is(refErr, tc.err) || (tc.err == nil && string(ref) != tc.want) {
				t.Fatalf("reference gives %q, %v; the table wants %q, %v", ref, refErr, tc.want, tc.err)
			}
			for _, c := range []chunking{defaultChunking, tinyChunking} {
				s := newSet(c)
				if err := s.Open("f", 1, []byte(tc.text)); err != nil {
					t.Fatal(err)
				}
				applied, err := s.Edit("f", 2, tc.enc, tc.edits, -1)
				if !errors.Is(err, tc.err) || applied != (tc.err == nil) {
					t.Fatalf("chunking %v: Edit = %v, %v; want %v", c, applied, err, tc.err)
				}
				snap, _ := s.Get("f")
				if string(snap.Text) != tc.want {
					t.Errorf("chunking %v: text %q, want %q", c, snap.Text, tc.want)
				}
				wantVersion := int64(2)
				if tc.err != nil {
					wantVersion = 1 // a refused batch leaves the version too
				}
				if snap.Version != wantVersion {
					t.Errorf("chunking %v: version %d, want %d", c, snap.Version, wantVersion)
				}
			}
		})
	}
}

func TestEditLength(t *testing.T) {
	s := NewSet()
	must(t, s.Open("f", 1, []byte("héllo\r\n")))
	edits := []Edit{ed(0, 5, 0, 5, "!")} // after the o, before \r\n: 9 bytes
	applied, err := s.Edit("f", 2, UTF16, edits, 8)
	if !errors.Is(err, ErrResync) || applied {
		t.Fatalf("wrong length: Edit = %v, %v; want ErrResync", applied, err)
	}
	if snap, _ := s.Get("f"); string(snap.Text) != "héllo\r\n" || snap.Version != 1 {
		t.Fatalf("after ErrResync: %q version %d; want it unchanged", snap.Text, snap.Version)
	}
	if applied, err := s.Edit("f", 2, UTF16, edits, 9); !applied || err != nil {
		t.Fatalf("right length: Edit = %v, %v", applied, err)
	}
	if snap, _ := s.Get("f"); string(snap.Text) != "héllo!\r\n" {
		t.Fatalf("text %q", snap.Text)
	}
	// A length with no edits still checks the text.
	if _, err := s.Edit("f", 3, UTF16, nil, 1); !errors.Is(err, ErrResync) {
		t.Fatalf("empty batch, wrong length: %v", err)
	}
}

func TestPositionOffsets(t *testing.T) {
	// Every position up to a few past each line, in both encodings, on
	// texts cut into tiny chunks, against the reference.
	texts := []string{"", "\n", "\r\n", "\r", "a\r\r\nb\n\rc", "héllo\nwörld", "a😀b\r\n中文\n\xff\xe2\x82x\r",
		"ab\ncd\nef\ngh\nij\nkl\nmn\nop\nqr\nst\nuv\nwx\nyz\n" + "😀😀😀😀😀😀😀😀😀😀😀😀\n" + "中中中中中中中中中中中中中\r\n"}
	for _, text := range texts {
		root := tinyChunking.build([]byte(text))
		checkRope(t, tinyChunking, root)
		starts, ends := refLines([]byte(text))
		for _, enc := range []Encoding{UTF8, UTF16} {
			for line := 0; line <= len(starts)+1; line++ {
				width := 0
				if line < len(starts) {
					width = ends[line] - starts[line]
				}
				for char := 0; char <= width+2; char++ {
					p := pos(line, char)
					if got, want := offset(root, p, enc), refOffset([]byte(text), p, enc); got != want {
						t.Errorf("%q %v %v: offset %d, want %d", text, enc, p, got, want)
					}
				}
			}
		}
	}
}

func TestEncodingString(t *testing.T) {
	for enc, want := range map[Encoding]string{UTF8: "utf-8", UTF16: "utf-16", 9: "Encoding(9)"} {
		if got := enc.String(); got != want {
			t.Errorf("%d: %q, want %q", int(enc), got, want)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// checkRope verifies the rope's invariants against the text it holds,
// using the reference rather than the package's own helpers.
func checkRope(t testing.TB, c chunking, root *node) {
	t.Helper()
	text := flatten(root)
	if got, want := root.metrics(), refMetrics(text); got != want {
		t.Fatalf("rope metrics %+v, text has %+v", got, want)
	}
	runes := refRuneStarts(text)
	var chunks int
	var walk func(n *node, base int) error
	walk = func(n *node, base int) error {
		if n == nil {
			return nil
		}
		for _, child := range []*node{n.left, n.right} {
			if child != nil && child.prio > n.prio {
				return fmt.Errorf("heap order broken at offset %d", base)
			}
		}
		if n.sum != n.left.metrics().add(n.own).add(n.right.metrics()) {
			return fmt.Errorf("stale sum at offset %d", base)
		}
		if err := walk(n.left, base); err != nil {
			return err
		}
		chunks++
		cs := base + n.left.size()
		ce := cs + len(n.chunk)
		if !bytes.Equal(n.chunk, text[cs:ce]) || n.own != measure(n.chunk) {
			return fmt.Errorf("chunk at %d: own metrics wrong", cs)
		}
		if len(n.chunk) == 0 || len(n.chunk) > c.max || (len(n.chunk) < c.min && len(text) != len(n.chunk)) {
			return fmt.Errorf("chunk at %d has %d bytes, outside [%d, %d]", cs, len(n.chunk), c.min, c.max)
		}
		if ce < len(text) && (!runes[ce] || text[ce-1] == '\r' && text[ce] == '\n') {
			return fmt.Errorf("chunk boundary at %d is inside a rune or a CRLF: %q", ce, text[max(ce-4, 0):min(ce+4, len(text))])
		}
		return walk(n.right, ce)
	}
	if err := walk(root, 0); err != nil {
		t.Fatalf("%v (%d bytes, %d chunks so far)", err, len(text), chunks)
	}
}
