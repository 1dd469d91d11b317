package buffers

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
)

// metrics summarise a run of text. They add up across chunks only because
// chunk boundaries never fall inside a "\r\n" pair or a valid UTF-8
// sequence (see legalCut), so measuring chunk by chunk gives the same
// numbers as measuring the whole text.
type metrics struct {
	bytes int
	lines int // line terminators: "\n", "\r\n" (one) and a "\r" not followed by "\n"
	utf16 int // UTF-16 code units; every byte of invalid UTF-8 counts as one (U+FFFD)
}

func (m metrics) add(o metrics) metrics {
	return metrics{bytes: m.bytes + o.bytes, lines: m.lines + o.lines, utf16: m.utf16 + o.utf16}
}

func measure(b []byte) metrics {
	return metrics{bytes: len(b), lines: countLineEnds(b), utf16: countUTF16(b)}
}

// countLineEnds counts terminators with the SIMD-backed bytes.Count; the
// "\r\n" pass runs only for text that has a "\r".
func countLineEnds(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if cr := bytes.Count(b, []byte{'\r'}); cr > 0 {
		n += cr - bytes.Count(b, []byte("\r\n"))
	}
	return n
}

// asciiMask has the high bit of each byte of a word set: a word of ASCII
// ANDed with it is zero.
const asciiMask = 0x8080808080808080

// unitsOf is the number of UTF-16 code units a rune decoded by
// utf8.DecodeRune takes; RuneError (invalid input) takes one.
func unitsOf(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// countUTF16 counts UTF-16 code units, eight ASCII bytes at a time.
func countUTF16(b []byte) int {
	n := 0
	for i := 0; i < len(b); {
		if i+8 <= len(b) && binary.LittleEndian.Uint64(b[i:])&asciiMask == 0 {
			n += 8
			i += 8
			continue
		}
		if b[i] < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, w := utf8.DecodeRune(b[i:])
		n += unitsOf(r)
		i += w
	}
	return n
}

// utf16Offset returns the byte offset in b after u UTF-16 code units, and
// how many of the u units remain when b ends first. A count that ends
// inside a surrogate pair rounds down to the rune's start (rest is then 1
// and off short of len(b)). b must start at a rune boundary.
func utf16Offset(b []byte, u int) (off, rest int) {
	i := 0
	for i < len(b) && u > 0 {
		if u >= 8 && i+8 <= len(b) && binary.LittleEndian.Uint64(b[i:])&asciiMask == 0 {
			u -= 8
			i += 8
			continue
		}
		if b[i] < utf8.RuneSelf {
			u--
			i++
			continue
		}
		r, w := utf8.DecodeRune(b[i:])
		n := unitsOf(r)
		if n > u {
			break
		}
		u -= n
		i += w
	}
	return i, u
}

// runeStart returns the start of the valid multi-byte UTF-8 sequence that
// q falls strictly inside, or q when it falls inside none. Any byte that
// starts a valid sequence is where sequential decoding (utf8.DecodeRune
// from the start of the text) also starts a rune, since continuation bytes
// never start one; so this local look at b[q-3:q+3] agrees with decoding
// the whole text. Invalid bytes decode one at a time and never contain q.
func runeStart(b []byte, q int) int {
	for p := q - 1; p >= 0 && p >= q-3; p-- {
		if b[p] < utf8.RuneSelf {
			break // ASCII is never inside a sequence, so none starting before it reaches q
		}
		if _, w := utf8.DecodeRune(b[p:]); w > 1 && p+w > q {
			return p
		}
	}
	return q
}

// legalCut reports whether a chunk boundary may sit at q in b: not between
// "\r" and "\n", nor inside a valid UTF-8 sequence. These two rules keep
// line and UTF-16 counts additive over chunks.
func legalCut(b []byte, q int) bool {
	if q <= 0 || q >= len(b) {
		return true
	}
	return !(b[q-1] == '\r' && b[q] == '\n') && runeStart(b, q) == q
}

// maxCutShift bounds how far cutBefore moves a cut: sequential decoding
// starts a rune at least every four bytes, and the position before a
// "\r" is always legal.
const maxCutShift = 4

// cutBefore returns the last legal cut at or before q, at most
// maxCutShift bytes back.
func cutBefore(b []byte, q int) int {
	for !legalCut(b, q) {
		q--
	}
	return q
}

// nthLineBreak returns the span of the k-th (k >= 1) line terminator in b,
// or len(b), len(b) if b has fewer. The text is scanned once for "\n" and
// each line once more for "\r", never past the line returned.
func nthLineBreak(b []byte, k int) (start, end int) {
	for i := 0; i < len(b); {
		s := indexFrom(b, i, '\n')
		if cr := bytes.IndexByte(b[i:s], '\r'); cr >= 0 {
			s = i + cr
		}
		if s == len(b) {
			break
		}
		e := s + 1
		if b[s] == '\r' && e < len(b) && b[e] == '\n' {
			e++
		}
		if k--; k == 0 {
			return s, e
		}
		i = e
	}
	return len(b), len(b)
}

// indexFrom is bytes.IndexByte from offset i, giving len(b) when absent.
func indexFrom(b []byte, i int, c byte) int {
	if j := bytes.IndexByte(b[i:], c); j >= 0 {
		return i + j
	}
	return len(b)
}
