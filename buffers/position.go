package buffers

import "fmt"

// Encoding is the unit of Position.Character, as negotiated by LSP's
// positionEncoding.
type Encoding int

const (
	UTF8  Encoding = iota // bytes
	UTF16                 // UTF-16 code units: LSP's default
)

// String gives the LSP name ("utf-8", "utf-16").
func (e Encoding) String() string {
	switch e {
	case UTF8:
		return "utf-8"
	case UTF16:
		return "utf-16"
	}
	return fmt.Sprintf("Encoding(%d)", int(e))
}

// Position is a place between two characters: a 0-based line and a 0-based
// character offset in that line, counted in the negotiated Encoding.
type Position struct{ Line, Character int }

// Range is the text between Start and End; Start must not come after End.
type Range struct{ Start, End Position }

// Edit replaces Range with Text, as an LSP TextDocumentContentChangeEvent
// with a range.
type Edit struct {
	Range Range
	Text  string
}

// String gives line:character, both 0-based.
func (p Position) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Character) }

func (r Range) String() string { return r.Start.String() + "-" + r.End.String() }

func (p Position) before(q Position) bool {
	return p.Line < q.Line || p.Line == q.Line && p.Character < q.Character
}

// check rejects what no clamping can make sense of: negative numbers,
// Start after End (a client that sends one has lost track of the text, so
// guessing by swapping would corrupt it quietly) and unknown encodings.
func (ed Edit) check(enc Encoding) error {
	r := ed.Range
	switch {
	case enc != UTF8 && enc != UTF16:
		return fmt.Errorf("unknown position encoding %d: %w", int(enc), ErrBadRange)
	case r.Start.Line < 0 || r.Start.Character < 0 || r.End.Line < 0 || r.End.Character < 0:
		return fmt.Errorf("range %v has a negative position: %w", r, ErrBadRange)
	case r.End.before(r.Start):
		return fmt.Errorf("range %v ends before it starts: %w", r, ErrBadRange)
	}
	return nil
}

// offset converts p to a byte offset in t. A line past the last means the
// end of the text; a character past the end of its line means the end of
// the line's content, before its terminator, so no offset ever falls
// between the "\r" and "\n" of a CRLF. A UTF-8 offset inside a multi-byte
// sequence, or a UTF-16 offset inside a surrogate pair, moves back to the
// rune's start. Clamping is monotonic: p before q gives offsets in order.
func offset(t *node, p Position, enc Encoding) int {
	start, end, ok := lineSpan(t, p.Line)
	if !ok {
		return t.size()
	}
	// A line never has more code units than bytes: this also keeps the
	// sums below from overflowing.
	if p.Character >= end-start {
		return end
	}
	if enc == UTF16 {
		return min(utf16Advance(t, start, p.Character), end)
	}
	o := start + p.Character
	// A valid sequence never spans a line terminator, so the line's bytes
	// around o are all runeStart needs.
	lo, hi := max(start, o-context), min(end, o+context)
	var buf [2 * context]byte
	return lo + runeStart(appendRange(buf[:0], t, lo, hi), o-lo)
}

// lineSpan returns where a line starts and where its content ends, before
// its terminator; ok is false past the last line. The end is usually
// found in the chunk that holds the start, without a second descent.
func lineSpan(t *node, line int) (start, end int, ok bool) {
	lines := t.metrics().lines
	if line > lines {
		return 0, 0, false
	}
	if line > 0 {
		c, base, k := findBreak(t, line)
		_, e := nthLineBreak(c, k)
		start = base + e
		if s, _ := nthLineBreak(c[e:], 1); e+s < len(c) {
			return start, start + s, true
		}
	}
	if line == lines {
		return start, t.size(), true
	}
	c, base, k := findBreak(t, line+1)
	s, _ := nthLineBreak(c, k)
	return start, base + s, true
}

// findBreak returns the chunk holding the k-th line terminator of t
// (1 <= k <= lines of t), its offset, and the terminator's number in it.
func findBreak(t *node, k int) (chunk []byte, base, kth int) {
	for {
		l := t.left.metrics().lines
		if k <= l {
			t = t.left
			continue
		}
		k -= l
		base += t.left.size()
		if k <= t.own.lines {
			return t.chunk, base, k
		}
		k -= t.own.lines
		base += len(t.chunk)
		t = t.right
	}
}

// utf16Advance returns the byte offset u UTF-16 code units after off (a
// rune boundary), rounded down to a rune start, or the size of t. The
// common case is answered by scanning from off in its own chunk, so it
// costs the column, not the chunk; a column that runs past the chunk
// seeks by the cached counts instead.
func utf16Advance(root *node, off, u int) int {
	t, base, before := root, 0, 0 // a subtree, its offset and the UTF-16 units before it
	for t != nil {
		lb := t.left.size()
		if off < lb {
			t = t.left
			continue
		}
		if off-lb < len(t.chunk) || t.right == nil {
			cs := base + lb
			o, rest := utf16Offset(t.chunk[off-lb:], u)
			if end := off - lb + o; end < len(t.chunk) || rest == 0 {
				return cs + end
			}
			return utf16Seek(root, before+t.left.metrics().utf16+t.own.utf16+rest)
		}
		base += lb + len(t.chunk)
		before += t.left.metrics().utf16 + t.own.utf16
		off -= lb + len(t.chunk)
		t = t.right
	}
	return base
}

// utf16Seek returns the byte offset after u UTF-16 code units of t,
// rounded down to a rune start; u past the end gives the size of t.
func utf16Seek(t *node, u int) int {
	base := 0
	for t != nil {
		lu := t.left.metrics().utf16
		if u < lu {
			t = t.left
			continue
		}
		u -= lu
		base += t.left.size()
		if u < t.own.utf16 {
			o, _ := utf16Offset(t.chunk, u)
			return base + o
		}
		u -= t.own.utf16
		base += len(t.chunk)
		t = t.right
	}
	return base
}

// applyEdits applies edits in order, each against the result of the ones
// before, and returns the new rope; t itself is left as it was.
func (c chunking) applyEdits(t *node, enc Encoding, edits []Edit) (*node, error) {
	for _, ed := range edits {
		if err := ed.check(enc); err != nil {
			return nil, err
		}
	}
	for _, ed := range edits {
		s := offset(t, ed.Range.Start, enc)
		e := s // an insertion, the usual edit while typing
		if ed.Range.End != ed.Range.Start {
			e = offset(t, ed.Range.End, enc)
		}
		t = c.replace(t, s, e, ed.Text)
	}
	return t, nil
}
