package acp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// MaxFileSize is the largest file, in bytes, fs/read_text_file serves and
// fs/write_text_file accepts. Its JSON encoding must also fit one message
// ([MaxMessage]); a file full of control characters, each escaped as six
// bytes, can be refused below this size.
const MaxFileSize = 16 << 20

// checkText refuses what ACP's text methods cannot carry faithfully: a
// file with a NUL byte (binary), and one that is not valid UTF-8. A JSON
// string holds Unicode text only, so an invalid byte would reach the
// agent as U+FFFD, and a file the agent then wrote back would be
// corrupted; refusing keeps every byte the agent sees true.
func checkText(key string, b []byte) error {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return &textError{key: key, msg: fmt.Sprintf("is a binary file (NUL byte at offset %d): only text files can be read through ACP", i)}
	}
	if !utf8.Valid(b) {
		return &textError{key: key, msg: fmt.Sprintf("is not valid UTF-8 (first bad byte at offset %d): only UTF-8 text files can be read through ACP", invalidUTF8At(b))}
	}
	return nil
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// sliceLines returns the rows of text from the 1-based line (0: the
// first) on, at most limit of them (negative: all), as Zed's
// read_text_file does. Rows end after each "\n", which stays with its
// row, as does a "\r" before it; the text after the last "\n" is one
// more row, empty when the text ends with a newline. A start past the
// last row is an error naming the last row and its length, Zed's
// "line R:C".
func sliceLines(text []byte, line, limit int64) ([]byte, error) {
	start := int64(0)
	if line > 1 {
		start = line - 1
	}
	off := 0 // where row `row` starts
	for row := int64(0); row < start; row++ {
		i := bytes.IndexByte(text[off:], '\n')
		if i < 0 {
			return nil, &beyondEndError{line: line, lastRow: row + 1, lastCol: len(text) - off}
		}
		off += i + 1
	}
	if limit < 0 {
		return text[off:], nil
	}
	end := off
	for n := int64(0); n < limit && end < len(text); n++ {
		i := bytes.IndexByte(text[end:], '\n')
		if i < 0 {
			end = len(text)
			break
		}
		end += i + 1
	}
	return text[off:end], nil
}

// needsEscape marks the bytes a JSON string cannot hold as they are.
var needsEscape = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// escapeIn reports whether any of the eight bytes in x needs escaping: is
// below 0x20, or is '"' or '\\' (the classic SWAR tests for a zero byte
// and for a byte less than n; exact as to whether there is one).
func escapeIn(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	less := (x - ones*0x20) &^ x
	quote := x ^ (ones * '"')
	quote = (quote - ones) &^ quote
	backslash := x ^ (ones * '\\')
	backslash = (backslash - ones) &^ backslash
	return (less|quote|backslash)&highs != 0
}

// appendJSONString appends s as a JSON string. s must be valid UTF-8
// (checkText): bytes from 0x80 up are copied as they are, and only '"',
// '\\' and control characters are escaped, so the result is what
// JSON.stringify would produce and no larger than it must be.
func appendJSONString(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		// Skip eight bytes at a time while none needs escaping.
		for i+8 <= len(s) && !escapeIn(binary.LittleEndian.Uint64(s[i:])) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if !needsEscape[c] {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
