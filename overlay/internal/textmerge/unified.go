package textmerge

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"znkr.io/diff"
	"znkr.io/diff/textdiff"
)

// contextLines is git's default diff.context.
const contextLines = 3

// noNewline follows a line that has no line ending, as in git's output.
const noNewline = "\n\\ No newline at end of file\n"

// Unified returns a git-style unified diff (3 lines of context) from old to
// new: header lines "--- a/<oldPath>" and "+++ b/<newPath>" ("/dev/null"
// for a side that does not exist, as told by oldExists and newExists),
// "@@ -l,s +l,s @@" hunks with git's default function-name suffix, and
// "\ No newline at end of file" where git prints it. Paths are quoted as
// git quotes them (core.quotePath), and a header whose path contains a
// space ends in a tab, as git's does.
//
// It returns the empty string when old and new are equal, even if one side
// does not exist: git prints no hunk for an empty file that is added or
// deleted either, only its "new file"/"deleted file" header, which is the
// caller's to write, as is the "diff --git" line.
//
// If either side is binary (see IsBinary) it returns git's
// "Binary files a/x and b/y differ\n".
func Unified(oldPath, newPath string, old, new []byte, oldExists, newExists bool) string {
	if bytes.Equal(old, new) {
		return ""
	}
	oldLabel, newLabel := "/dev/null", "/dev/null"
	if oldExists {
		oldLabel = quotePath("a/" + oldPath)
	}
	if newExists {
		newLabel = quotePath("b/" + newPath)
	}
	if IsBinary(old) || IsBinary(new) {
		return "Binary files " + oldLabel + " and " + newLabel + " differ\n"
	}

	var b strings.Builder
	writeFileHeader(&b, "--- ", oldLabel)
	writeFileHeader(&b, "+++ ", newLabel)
	for _, h := range Hunks(old, new) {
		b.WriteString(h.Text)
	}
	return b.String()
}

// Stat counts the lines added and deleted from old to new, as
// `git diff --numstat` does. Changed binary content reports binary=true
// and no counts; equal content is never binary, as git lists no change.
func Stat(old, new []byte) (added, deleted int, binary bool) {
	if bytes.Equal(old, new) {
		return 0, 0, false
	}
	if IsBinary(old) || IsBinary(new) {
		return 0, 0, true
	}
	for _, h := range textdiff.Hunks(old, new, diff.Context(0)) {
		deleted += h.EndLineNoX - h.LineNoX
		added += h.EndLineNoY - h.LineNoY
	}
	return added, deleted, false
}

// writeFileHeader writes a "---"/"+++" line; git appends a tab to a name
// that contains a space so that patch tools can tell where it ends.
func writeFileHeader(b *strings.Builder, prefix, label string) {
	b.WriteString(prefix)
	b.WriteString(label)
	if strings.Contains(label, " ") {
		b.WriteByte('\t')
	}
	b.WriteByte('\n')
}

// writeRange writes one side of a hunk header the way git does: the start
// is 1-based, or the line before the hunk when it is empty, and a count of
// 1 is left out.
func writeRange(b *strings.Builder, start, count int) {
	if count > 0 {
		start++
	}
	b.WriteString(strconv.Itoa(start))
	if count != 1 {
		b.WriteByte(',')
		b.WriteString(strconv.Itoa(count))
	}
}

// funcNameMax is the size of git's function-line buffer (struct func_line
// in xdiff/xemit.c); longer lines are cut.
const funcNameMax = 80

// funcLine finds the text git shows after a hunk header: the nearest line
// of the old file above the hunk that starts with a letter, '_' or '$'
// (xdiff's default, used when no diff driver is configured). Like git it
// searches back only to the previous hunk's start and otherwise keeps the
// previous hunk's answer, so successive calls must have increasing starts.
type funcLine struct {
	lines [][]byte // the old file's lines
	limit int      // the search stops above this line
	name  []byte   // the last line found
}

// before returns the function line for a hunk whose first line (context
// included) is start.
func (f *funcLine) before(start int) []byte {
	for l := start - 1; l > f.limit; l-- {
		if name, ok := funcName(f.lines[l]); ok {
			f.name = name
			break
		}
	}
	f.limit = start - 1
	return f.name
}

// funcName mirrors def_ff in git's xdiff/xemit.c: a line that starts with
// an ASCII letter, '_' or '$', cut to 80 bytes, trailing blanks removed.
// Git then cuts the name at its first byte that is not valid UTF-8.
func funcName(line []byte) ([]byte, bool) {
	if c := line[0]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '$') {
		return nil, false
	}
	line = bytes.TrimRight(line[:min(len(line), funcNameMax)], " \t\r\n")
	return utf8Prefix(line), true
}

// utf8Prefix returns the longest prefix of b that git counts as UTF-8:
// Go's rules, except that git also rejects U+FFFE and U+FFFF.
func utf8Prefix(b []byte) []byte {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 || r == 0xFFFE || r == 0xFFFF {
			return b[:i]
		}
		i += n
	}
	return b
}

// quotePath quotes a path the way git does with core.quotePath on (its
// default): when it has control characters, '"', '\\' or bytes >= 0x7f,
// it is put in double quotes with C escapes, octal for the rest.
func quotePath(p string) string {
	i := 0
	for i < len(p) && !mustQuote(p[i]) {
		i++
	}
	if i == len(p) {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	b.WriteString(p[:i])
	for ; i < len(p); i++ {
		c := p[i]
		if !mustQuote(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('\\')
		if esc := cEscape(c); esc != 0 {
			b.WriteByte(esc)
			continue
		}
		b.WriteByte('0' + c>>6)
		b.WriteByte('0' + c>>3&7)
		b.WriteByte('0' + c&7)
	}
	b.WriteByte('"')
	return b.String()
}

func mustQuote(c byte) bool {
	return c < 0x20 || c == '"' || c == '\\' || c >= 0x7f
}

// cEscape returns the letter of c's C escape, or 0 if it has none.
func cEscape(c byte) byte {
	switch c {
	case '\a':
		return 'a'
	case '\b':
		return 'b'
	case '\t':
		return 't'
	case '\n':
		return 'n'
	case '\v':
		return 'v'
	case '\f':
		return 'f'
	case '\r':
		return 'r'
	case '"', '\\':
		return c
	}
	return 0
}
