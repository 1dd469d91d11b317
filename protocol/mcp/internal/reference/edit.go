package reference

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// ErrNoMatch: an edit's oldText is not in the file.
var ErrNoMatch = errors.New("could not find exact match")

// Edit is one replacement of edit_file.
type Edit struct {
	OldText string `json:"oldText"`
	NewText string `json:"newText"`
}

// editError says which edit did not match, in the reference's words.
type editError struct{ oldText string }

func (e *editError) Error() string { return "Could not find exact match for edit:\n" + e.oldText }
func (e *editError) Unwrap() error { return ErrNoMatch }

// ApplyEdits applies edits in order the way the reference's edit_file
// does: line ends normalised to "\n"; the first exact occurrence of
// oldText is replaced; failing that, the first run of lines equal to
// oldText's lines once both are trimmed is replaced, the new lines taking
// the indentation of the first matched line plus each new line's extra
// indentation relative to the old text. It returns the normalised content
// before and after.
func ApplyEdits(content string, edits []Edit) (before, after string, err error) {
	before = strings.ReplaceAll(content, "\r\n", "\n")
	after = before
	for _, e := range edits {
		oldText := strings.ReplaceAll(e.OldText, "\r\n", "\n")
		newText := strings.ReplaceAll(e.NewText, "\r\n", "\n")
		if strings.Contains(after, oldText) {
			after = strings.Replace(after, oldText, newText, 1)
			continue
		}
		oldLines := strings.Split(oldText, "\n")
		lines := strings.Split(after, "\n")
		found := false
		for i := 0; i+len(oldLines) <= len(lines); i++ {
			if !trimmedEqual(lines[i:i+len(oldLines)], oldLines) {
				continue
			}
			indent := leadingSpace(lines[i])
			newLines := strings.Split(newText, "\n")
			for j, l := range newLines {
				if j == 0 {
					newLines[j] = indent + trimSpaceStart(l)
					continue
				}
				oldIndent := ""
				if j < len(oldLines) {
					oldIndent = leadingSpace(oldLines[j])
				}
				newIndent := leadingSpace(l)
				if oldIndent != "" && newIndent != "" {
					extra := utf8.RuneCountInString(newIndent) - utf8.RuneCountInString(oldIndent)
					newLines[j] = indent + strings.Repeat(" ", max(0, extra)) + trimSpaceStart(l)
				}
			}
			lines = append(lines[:i], append(newLines, lines[i+len(oldLines):]...)...)
			after = strings.Join(lines, "\n")
			found = true
			break
		}
		if !found {
			return before, after, &editError{oldText: e.OldText}
		}
	}
	return before, after, nil
}

func trimmedEqual(a, b []string) bool {
	for i := range b {
		if trimSpace(a[i]) != trimSpace(b[i]) {
			return false
		}
	}
	return true
}

// isJSSpace reports whether JavaScript's trim and \s count r as white
// space (Go's unicode.IsSpace differs on U+0085 and U+FEFF).
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

func trimSpace(s string) string      { return strings.TrimFunc(s, isJSSpace) }
func trimSpaceStart(s string) string { return strings.TrimLeftFunc(s, isJSSpace) }

// leadingSpace is the white space s starts with.
func leadingSpace(s string) string { return s[:len(s)-len(trimSpaceStart(s))] }

// EditResult is what edit_file shows: the diff in a fenced block with
// enough backticks that the diff cannot close it.
func EditResult(diff string) string {
	fence := "```"
	for strings.Contains(diff, fence) {
		fence += "`"
	}
	return fence + "diff\n" + diff + fence + "\n\n"
}
