package textmerge

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// lf joins lines, each ending in "\n".
func lf(lines ...string) []byte {
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return b.Bytes()
}

// numbered returns n lines "<prefix> <i>" for i from 1, each ending in
// "\n".
func numbered(prefix string, n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("%s %d", prefix, i+1)
	}
	return lines
}

// replaced returns a copy of lines with lines[i] set to v for each i, v.
func replaced(lines []string, kv map[int]string) []string {
	out := append([]string(nil), lines...)
	for i, v := range kv {
		out[i] = v
	}
	return out
}

// codeLike is a Go-ish file: few lines start in column 0, so git's
// function-name search has to look far back and across hunks.
func codeLike(body int, edit func(fn, i int) string) []byte {
	var b bytes.Buffer
	b.WriteString("package demo\n\n")
	for fn := range 3 {
		fmt.Fprintf(&b, "// f%d does step %d.\nfunc f%d(x int) int {\n", fn, fn, fn)
		for i := range body {
			line := fmt.Sprintf("\tx += %d // f%d line %d", i, fn, i)
			if edit != nil {
				if s := edit(fn, i); s != "" {
					line = s
				}
			}
			b.WriteString(line + "\n")
		}
		b.WriteString("\treturn x\n}\n\n")
	}
	return b.Bytes()
}

// withBody returns a function line, three indented lines and a fourth
// indented line last, so that a change to last gets head in its hunk
// header.
func withBody(head, last string) []byte {
	return lf(head, "\ta", "\tb", "\tc", "\t"+last)
}

type unifiedCase struct {
	name                 string
	path                 string // default "f.txt"
	old, new             []byte
	oldAbsent, newAbsent bool // the side does not exist (git's /dev/null)
}

func unifiedCases() []unifiedCase {
	base := numbered("line", 30)
	large := numbered("row", 3000)
	largeEdited := replaced(large, map[int]string{
		10: "ROW 11", 16: "ROW 17", // 5 equal lines apart: one hunk
		100: "ROW 101", 107: "ROW 108", // 6 apart: still one hunk
		200: "ROW 201", 208: "ROW 209", // 7 apart: two hunks
		1500: "ROW 1501", 2999: "ROW 3000",
	})
	largeEdited = append(largeEdited[:600:600], append([]string{"inserted a", "inserted b"}, largeEdited[600:]...)...)
	largeEdited = append(largeEdited[:1200:1200], largeEdited[1210:]...) // delete 10 lines

	var crlf, crlfEdited bytes.Buffer
	for i := range 12 {
		fmt.Fprintf(&crlf, "crlf %d\r\n", i)
		if i == 5 {
			fmt.Fprintf(&crlfEdited, "CRLF %d\r\n", i)
		} else {
			fmt.Fprintf(&crlfEdited, "crlf %d\r\n", i)
		}
	}
	longFunc := "func " + strings.Repeat("long", 30) + "() {   \t"

	cases := []unifiedCase{
		{name: "modify", old: lf(base...), new: lf(replaced(base, map[int]string{14: "LINE 15"})...)},
		{name: "modify first and last", old: lf(base...), new: lf(replaced(base, map[int]string{0: "first", 29: "last"})...)},
		{name: "add file", new: lf("a", "b", "c"), oldAbsent: true},
		{name: "delete file", old: lf("a", "b", "c"), newAbsent: true},
		{name: "add one line", new: []byte("only\n"), oldAbsent: true},
		{name: "delete one line", old: []byte("only"), newAbsent: true},
		{name: "no final newline old", old: []byte("a\nb\nc"), new: lf("a", "b", "c")},
		{name: "no final newline new", old: lf("a", "b", "c"), new: []byte("a\nb\nc")},
		{name: "no final newline both", old: []byte("a\nb\nc"), new: []byte("a\nB\nc")},
		{name: "no final newline both changed", old: []byte("a\nb\nc"), new: []byte("a\nb\nC")},
		{name: "append after line without newline", old: []byte("a\nb"), new: lf("a", "b", "c")},
		{name: "crlf", old: crlf.Bytes(), new: crlfEdited.Bytes()},
		{name: "crlf to lf", old: []byte("a\r\nb\r\nc\r\n"), new: lf("a", "b", "c")},
		{name: "empty to text", old: []byte{}, new: lf("x", "y")},
		{name: "text to empty", old: lf("x", "y"), new: []byte{}},
		{name: "empty to empty", old: []byte{}, new: []byte{}},
		{name: "add empty file", oldAbsent: true},
		{name: "equal", old: lf(base...), new: lf(base...)},
		{name: "large several hunks", old: lf(large...), new: lf(largeEdited...)},
		{name: "function names across hunks", old: codeLike(60, nil), new: codeLike(60, func(fn, i int) string {
			if (fn == 1 && (i == 5 || i == 40)) || (fn == 2 && i == 59) {
				return fmt.Sprintf("\tx -= %d", i)
			}
			return ""
		})},
		{name: "long function line", old: lf(append([]string{longFunc}, numbered("\tstmt", 10)...)...),
			new: lf(append([]string{longFunc}, replaced(numbered("\tstmt", 10), map[int]string{7: "\tchanged"})...)...)},
		{name: "underscore and dollar function lines", old: lf("_init:", "\ta", "\tb", "\tc", "\td", "$var", "\te", "\tf", "\tg", "\th"),
			new: lf("_init:", "\ta", "\tb", "\tc", "\tD", "$var", "\te", "\tf", "\tg", "\tH")},
		{name: "function line with invalid utf-8", old: withBody("fn \xff\xfe tail", "d"), new: withBody("fn \xff\xfe tail", "D")},
		{name: "function line cut inside a character", old: withBody("f"+strings.Repeat("é", 50), "d"), new: withBody("f"+strings.Repeat("é", 50), "D")},
		{name: "function line with U+FFFE", old: withBody("nc\uFFFEz", "d"), new: withBody("nc\uFFFEz", "D")},
		{name: "invalid utf-8", old: []byte("caf\xe9\n\xff\xfe\nend\n"), new: []byte("caf\xe9\n\xfe\xff\nend\n")},
		{name: "path with space and non-ascii", path: "dir with space/naïve \"q\".txt", old: lf("a", "b"), new: lf("a", "c")},
		{name: "binary modify", old: []byte("a\x00b"), new: []byte("a\x00c")},
		{name: "binary new side", old: lf("text"), new: []byte("\x00")},
		{name: "binary add", new: []byte("\x00\x01"), oldAbsent: true},
		{name: "binary delete", old: []byte("\x00\x01"), newAbsent: true},
		{name: "binary equal", old: []byte("\x00"), new: []byte("\x00")},
		{name: "nul after 8000 bytes is text", old: append(bytes.Repeat([]byte("abcdefg\n"), 1000), "x\x00\n"...),
			new: append(bytes.Repeat([]byte("abcdefg\n"), 1000), "y\x00\n"...)},
	}
	for i := range cases {
		if cases[i].path == "" {
			cases[i].path = "f.txt"
		}
	}
	return cases
}

// TestUnifiedMatchesGit: Unified writes what git diff --no-index
// does, and Stat counts what git diff --numstat does.
func TestUnifiedMatchesGit(t *testing.T) {
	requireGit(t)
	for _, c := range unifiedCases() {
		t.Run(c.name, func(t *testing.T) {
			dir, oldArg, newArg := gitPaths(t, c.path, c.old, c.new, !c.oldAbsent, !c.newAbsent)
			want := gitDiff(t, dir, oldArg, newArg)
			got := Unified(oldArg, newArg, c.old, c.new, !c.oldAbsent, !c.newAbsent)
			if got != want {
				t.Errorf("Unified differs from git diff --no-index\n got:\n%s\nwant:\n%s", got, want)
			}
			wa, wd, wb := gitNumstat(t, dir, oldArg, newArg)
			ga, gd, gb := Stat(c.old, c.new)
			if ga != wa || gd != wd || gb != wb {
				t.Errorf("Stat = +%d -%d binary=%v, git numstat +%d -%d binary=%v", ga, gd, gb, wa, wd, wb)
			}
		})
	}
}

// TestUnifiedRandomMatchesGit compares random edits of files whose lines
// are all distinct, so that the diff is unambiguous and any difference
// from git is a formatting bug (hunk joining, counts, function names,
// missing newlines).
func TestUnifiedRandomMatchesGit(t *testing.T) {
	requireGit(t)
	const runs = 60
	seed := rand.Uint64()
	for run := range uint64(runs) {
		r := rand.New(rand.NewPCG(seed, run))
		old := randomText(r, r.IntN(80), "o")
		new := randomEdit(r, old, "n")
		dir, oldArg, newArg := gitPaths(t, "f", old, new, true, true)
		want := gitDiff(t, dir, oldArg, newArg)
		if got := Unified(oldArg, newArg, old, new, true, true); got != want {
			t.Fatalf("seed %d run %d: Unified differs from git\nold: %q\nnew: %q\n got:\n%s\nwant:\n%s", seed, run, old, new, got, want)
		}
	}
}

// randomText returns n distinct lines: some in column 0 (function-name
// candidates for git), most indented, endings LF or CRLF, and maybe no
// final newline.
func randomText(r *rand.Rand, n int, tag string) []byte {
	var b bytes.Buffer
	for i := range n {
		writeRandomLine(r, &b, fmt.Sprintf("%s%d", tag, i))
	}
	if n > 0 && r.IntN(4) == 0 {
		b.Truncate(b.Len() - 1)
		if b.Len() > 0 && b.Bytes()[b.Len()-1] == '\r' {
			b.Truncate(b.Len() - 1)
		}
	}
	return b.Bytes()
}

func writeRandomLine(r *rand.Rand, b *bytes.Buffer, id string) {
	if r.IntN(5) != 0 {
		b.WriteByte('\t')
	}
	b.WriteString(id)
	if r.IntN(8) == 0 {
		b.WriteString(" \xff\xfe") // invalid UTF-8
	}
	if r.IntN(6) == 0 {
		b.WriteString("\r\n")
	} else {
		b.WriteString("\n")
	}
}

// randomEdit returns text with a few random lines deleted, replaced or
// inserted; new lines are tagged so they are distinct from every old one.
func randomEdit(r *rand.Rand, text []byte, tag string) []byte {
	var b bytes.Buffer
	lines := splitLines(text)
	for i, l := range lines {
		switch r.IntN(12) {
		case 0: // delete
		case 1: // replace
			writeRandomLine(r, &b, fmt.Sprintf("%s%d", tag, i))
		case 2: // insert before
			writeRandomLine(r, &b, fmt.Sprintf("%s%d", tag, i))
			b.Write(l)
		default:
			b.Write(l)
		}
	}
	if r.IntN(3) == 0 && (len(text) == 0 || text[len(text)-1] == '\n') {
		writeRandomLine(r, &b, tag+"end")
	}
	return b.Bytes()
}

func TestIsBinary(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want bool
	}{
		{nil, false},
		{[]byte("text\n"), false},
		{[]byte("\xff\xfe invalid utf-8 is text"), false},
		{[]byte("a\x00"), true},
		{append(bytes.Repeat([]byte{'a'}, binaryProbe-1), 0), true},
		{append(bytes.Repeat([]byte{'a'}, binaryProbe), 0), false},
	} {
		if got := IsBinary(c.in); got != c.want {
			t.Errorf("IsBinary(%.20q…) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestQuotePath(t *testing.T) {
	for in, want := range map[string]string{
		"a/plain.txt":   "a/plain.txt",
		"a/with space":  "a/with space",
		"a/naïve":       `"a/na\303\257ve"`,
		"a/tab\there":   `"a/tab\there"`,
		"a/q\"b\\c":     `"a/q\"b\\c"`,
		"a/bell\a\x01":  `"a/bell\a\001"`,
		"a/del\x7f.txt": `"a/del\177.txt"`,
	} {
		if got := quotePath(in); got != want {
			t.Errorf("quotePath(%q) = %s, want %s", in, got, want)
		}
	}
}
