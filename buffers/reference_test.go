package buffers

import (
	"errors"
	"unicode/utf8"
)

// The naive reference the rope is checked against: the text is one slice
// and every position is found by scanning from the start. Written from the
// documented rules, sharing no code with the package.

// refLines returns where each line's content starts and ends; terminators
// are "\n", "\r\n" and a lone "\r".
func refLines(b []byte) (starts, ends []int) {
	start := 0
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' && b[i] != '\r' {
			continue
		}
		starts, ends = append(starts, start), append(ends, i)
		if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
			i++
		}
		start = i + 1
	}
	return append(starts, start), append(ends, len(b))
}

func refOffset(b []byte, p Position, enc Encoding) int {
	starts, ends := refLines(b)
	if p.Line >= len(starts) {
		return len(b)
	}
	off, end, col := starts[p.Line], ends[p.Line], 0
	for off < end {
		r, w := utf8.DecodeRune(b[off:])
		units := w
		if enc == UTF16 {
			units = 1
			if r > 0xFFFF {
				units = 2
			}
		}
		if col+units > p.Character {
			break
		}
		col += units
		off += w
	}
	return off
}

func refApply(b []byte, enc Encoding, edits []Edit) ([]byte, error) {
	for _, ed := range edits {
		s, e := ed.Range.Start, ed.Range.End
		if enc != UTF8 && enc != UTF16 || s.Line < 0 || s.Character < 0 || e.Line < 0 || e.Character < 0 ||
			e.Line < s.Line || e.Line == s.Line && e.Character < s.Character {
			return nil, ErrBadRange
		}
	}
	for _, ed := range edits {
		s, e := refOffset(b, ed.Range.Start, enc), refOffset(b, ed.Range.End, enc)
		if s > e {
			return nil, errors.New("reference: clamped range inverted")
		}
		b = append(append(append([]byte{}, b[:s]...), ed.Text...), b[e:]...)
	}
	return b, nil
}

// refMetrics measures a whole text at once.
func refMetrics(b []byte) metrics {
	starts, _ := refLines(b)
	m := metrics{bytes: len(b), lines: len(starts) - 1}
	for i := 0; i < len(b); {
		r, w := utf8.DecodeRune(b[i:])
		m.utf16++
		if r > 0xFFFF {
			m.utf16++
		}
		i += w
	}
	return m
}

// refRuneStarts marks where sequential decoding of the whole text starts
// a rune.
func refRuneStarts(b []byte) []bool {
	starts := make([]bool, len(b)+1)
	for i := 0; i < len(b); {
		starts[i] = true
		_, w := utf8.DecodeRune(b[i:])
		i += w
	}
	starts[len(b)] = true
	return starts
}
