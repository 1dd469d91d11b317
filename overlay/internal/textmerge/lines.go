package textmerge

import "bytes"

// binaryProbe is how many leading bytes git inspects for a NUL
// (FIRST_FEW_BYTES in git's xdiff-interface.c).
const binaryProbe = 8000

// IsBinary reports whether b looks binary the way git decides it: a NUL
// byte within the first 8000 bytes.
func IsBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), binaryProbe)], 0) >= 0
}

// splitLines cuts b into lines that keep their terminating "\n" (and any
// "\r" before it); only the last line may lack one. The lines alias b, so
// writing them back in order reproduces b byte for byte. This is the same
// split the diff engine uses, so its line numbers index these slices.
func splitLines(b []byte) [][]byte {
	lines := make([][]byte, 0, bytes.Count(b, []byte{'\n'})+1)
	for len(b) > 0 {
		n := bytes.IndexByte(b, '\n') + 1
		if n == 0 {
			n = len(b)
		}
		lines = append(lines, b[:n:n])
		b = b[n:]
	}
	return lines
}

// eol is the line-ending style of a line, as git's merge decides it for
// conflict markers.
type eol int8

const (
	eolUnknown eol = iota
	eolLF
	eolCRLF
)

// eolAt reports the line ending of lines[i]; for a last line without one it
// looks at the line before. It mirrors is_eol_crlf in git's xdiff/xmerge.c
// so conflict markers get the same endings git merge-file gives them.
func eolAt(lines [][]byte, i int) eol {
	n := len(lines)
	if n == 0 {
		return eolUnknown
	}
	if l := lines[i]; i < n-1 || l[len(l)-1] == '\n' {
		return lineEOL(l)
	}
	if i == 0 {
		return eolUnknown
	}
	return lineEOL(lines[i-1])
}

// lineEOL classifies a line known to end in "\n".
func lineEOL(l []byte) eol {
	if len(l) > 1 && l[len(l)-2] == '\r' {
		return eolCRLF
	}
	return eolLF
}
