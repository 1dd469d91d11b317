package mcp

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// searchEnv adds files for content search to the fixture.
func searchEnv(t *testing.T) *env {
	e := newEnv(t)
	for k, v := range map[string]string{
		"src/use.go":        "package src\n\nfunc use() {\n\tx := ParseConfig(\"a\")\n\t_ = x\n}\n",
		"src/config.go":     "package src\n\n// ParseConfig reads the configuration.\nfunc ParseConfig(s string) Config {\n\treturn Config{}\n}\n",
		"vendor/config.go":  "package src\n\n// ParseConfig reads the configuration.\nfunc ParseConfig(s string) Config {\n\treturn Config{}\n}\n",
		"docs/notes.md":     "mentions parseconfig in lower case\nand ParseConfigs plural\n",
		"src/many.txt":      strings.Repeat("filler\n", 3) + "ParseConfig one\nfiller\nParseConfig two\n" + strings.Repeat("filler\n", 10) + "ParseConfig three\n",
		".git/objects/x":    "ParseConfig in git\n",
		"src/minified.js":   strings.Repeat("a", 1000) + "ParseConfig" + strings.Repeat("b", 1000) + "\n",
		"src/binary.dat":    "ParseConfig\x00\x01",
		"src/deep/a/b/c.go": "var ParseConfig = 1\n",
	} {
		if err := e.f.WriteFile(k, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func TestSearchContentRanking(t *testing.T) {
	e := searchEnv(t)
	r := e.call("search_content", m("path", ".", "pattern", "ParseConfig"))
	if r.isError {
		t.Fatal(r.text)
	}
	got := r.text
	// Definitions first; the vendored copy folded into the first.
	first := strings.Index(got, e.abs("src/config.go"))
	if first < 0 || strings.Index(got, "\n\n"+e.abs("src/config.go")+" (same content: "+e.abs("vendor/config.go")+")") < 0 {
		t.Fatalf("src/config.go with its copy not listed:\n%s", got)
	}
	for _, later := range []string{"src/use.go", "src/many.txt", "docs/notes.md"} {
		if i := strings.Index(got, e.abs(later)); i < first {
			t.Errorf("%s (at %d) ranks above the definition (at %d):\n%s", later, i, first, got)
		}
	}
	if strings.Index(got, e.abs("src/deep/a/b/c.go")) > strings.Index(got, e.abs("src/use.go")) {
		t.Errorf("var ParseConfig (a definition) ranks below a use:\n%s", got)
	}
	for _, skipped := range []string{".git", "binary.dat"} {
		if strings.Contains(got, skipped) {
			t.Errorf("%s searched:\n%s", skipped, got)
		}
	}
	if !strings.Contains(got, "(skipped 4 binary files and 0 files over 10.00 MB)") {
		t.Errorf("skipped files not counted:\n%s", got)
	}
	// Context: overlapping windows merge, distant ones are separated.
	want := "\n\n" + e.abs("src/many.txt") + "\n  2- filler\n  3- filler\n  4: ParseConfig one\n  5- filler\n  6: ParseConfig two\n  7- filler\n  8- filler\n  --\n  15- filler\n  16- filler\n  17: ParseConfig three\n\n"
	if !strings.Contains(got, want) {
		t.Errorf("many.txt's block is not\n%s\nin\n%s", want, got)
	}
	// Long lines are cut around the match.
	if !strings.Contains(got, "…"+strings.Repeat("a", 100)+"ParseConfig") || strings.Contains(got, strings.Repeat("a", 500)) {
		t.Errorf("the minified line is not cut around the match:\n%s", got)
	}
	// Case-insensitive by default: the notes match, exact case ranks first.
	if !strings.Contains(got, "1: mentions parseconfig in lower case") {
		t.Errorf("case-insensitive match missing:\n%s", got)
	}
	files, _ := r.structured["files"].([]any)
	if r.structured["total"] != float64(10) || len(files) != 6 || r.structured["truncated"] != false {
		t.Errorf("structured: total %v files %d truncated %v", r.structured["total"], len(files), r.structured["truncated"])
	}
}

func TestSearchContentOptions(t *testing.T) {
	e := searchEnv(t)
	got := e.ok("search_content", m("path", ".", "pattern", "ParseConfig", "caseSensitive", true, "include", []any{"docs/**"}))
	if !strings.Contains(got, "2: and ParseConfigs plural") || strings.Contains(got, "1: mentions") || strings.Contains(got, "src/") {
		t.Errorf("caseSensitive + include:\n%s", got)
	}
	got = e.ok("search_content", m("path", ".", "pattern", `func \w+Config\(`, "regex", true, "excludePatterns", []any{"vendor"}))
	if !strings.Contains(got, "Found 1 matching line in 1 file") || !strings.Contains(got, "4: func ParseConfig(s string) Config {") {
		t.Errorf("regex + exclude:\n%s", got)
	}
	got = e.ok("search_content", m("path", ".", "pattern", "ParseConfig", "maxResults", 2, "contextLines", 0))
	if !strings.Contains(got, "Showing 2 of 10 matching lines, best first") || len(regexp.MustCompile(`(?m)^  \d+: `).FindAllString(got, -1)) != 2 {
		t.Errorf("maxResults 2:\n%s", got)
	}
	got = e.ok("search_content", m("path", "src/many.txt", "pattern", "three", "contextLines", 1))
	if got != "Found 1 matching line in 1 file for \"three\"\n\n"+e.abs("src/many.txt")+"\n  16- filler\n  17: ParseConfig three" {
		t.Errorf("one file:\n%q", got)
	}
	if got := e.ok("search_content", m("path", "sub", "pattern", "ParseConfig")); got != "No matches found" {
		t.Errorf("no matches: %q", got)
	}
	// Unsaved editor text is searched, not the disk's.
	if err := e.ws.Buffers().Open("B.txt", 1, []byte("the editor typed ParseConfig here\n")); err != nil {
		t.Fatal(err)
	}
	if got := e.ok("search_content", m("path", ".", "pattern", "typed ParseConfig")); !strings.Contains(got, e.abs("B.txt")+"\n  1: the editor typed ParseConfig here") {
		t.Errorf("buffer not searched:\n%s", got)
	}
	e.fails("search_content", m("path", "/etc", "pattern", "root"), "Access denied - path outside allowed directories")
}

// TestIndexFoldASCII agrees with a (?i) regexp on random ASCII text.
func TestIndexFoldASCII(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const letters = "aAbB_ zZ"
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = letters[r.IntN(len(letters))]
		}
		return string(b)
	}
	for range 5000 {
		text, pat := word(r.IntN(40)), word(1+r.IntN(3))
		want := -1
		if loc := regexp.MustCompile("(?i)" + regexp.QuoteMeta(pat)).FindStringIndex(text); loc != nil {
			want = loc[0]
		}
		if got := indexFoldASCII([]byte(text), []byte(pat)); got != want {
			t.Fatalf("indexFoldASCII(%q, %q) = %d, want %d", text, pat, got, want)
		}
	}
}
