package reference

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/draftfs/draftfs/protocol/mcp/internal/peers"
)

var globPatterns = []string{
	"*.txt", "**/*.txt", "a/**", "**", "a/**/b", "*", "{a,b}.txt", "a/*", "!*.txt",
	"**/.git", `x\*y`, "[!a]*", "[^a]*", "@(a|b).txt", "a{1..3}", "src/**/*.{js,ts}",
	"**/sub", "sub", "a/**/**/c.txt", "**/b/**", "?.txt", "[a-c].txt", "[[:digit:]]*",
	"+(a|b)", "*(x)y", "?(a).txt", "{a,{b,c}}.txt", "a{,b}", "{a}", "{}", "{01..03}",
	"{c..a}", "{1..7..3}", "**/*", "*/**", "a/**/*", "#comment", "", "!!a", ".*",
	"**/.hidden", "[]a]*", "a?b", "*.{txt,bin}", "**/*.TXT", "b/**/c.txt", "!(a).txt", "(a).txt",
}

var globPaths = []string{
	"a.txt", "a", "a/b", "a/b/c.txt", "a/x/b", ".hidden", "b.txt", "sub", "x/sub",
	"x*y", "xzy", "a2", "a4", "src/x/y.ts", "src/y.js", ".git/config", "d/.git",
	"c.txt", "1file", "ab", "bb", "xxy", "y", "01", "03", "a", "b", "c", "7", "4",
	"a/b/x/c.txt", "b/c.txt", "b/q/c.txt", "deep/.hidden", "]z", "a-b", "acb",
	"A.TXT", "x/A.TXT", "#comment", "{a}", "{}", "b/b", "(a).txt",
}

// TestGlobMatchesMinimatch compares glob with minimatch(path, pattern,
// {dot: true}), as the reference server calls it, over every pair.
func TestGlobMatchesMinimatch(t *testing.T) {
	in, _ := json.Marshal(map[string]any{"patterns": globPatterns, "paths": globPaths})
	out := peers.RunNode(t, `
import { minimatch } from "minimatch";
import { readFileSync } from "node:fs";
const { patterns, paths } = JSON.parse(readFileSync(0, "utf8"));
console.log(JSON.stringify(patterns.map(p => paths.map(x => minimatch(x, p, { dot: true })))));
`, in)
	var want [][]bool
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for i, p := range globPatterns {
		g, err := CompileGlob(p)
		if err != nil {
			t.Errorf("CompileGlob(%q): %v", p, err)
			continue
		}
		for j, x := range globPaths {
			if got := g.Match(x); got != want[i][j] {
				t.Errorf("match(%q, %q) = %v, minimatch says %v", x, p, got, want[i][j])
			}
		}
	}
}

func TestGlobRefusesBadPatterns(t *testing.T) {
	for _, p := range []string{"[a-", "*.{js,ts", "@(a|b", "x/!(y)", "[z-a]", "[[:nope:]]", "{1..100000}"} {
		if _, err := CompileGlob(p); !errors.Is(err, ErrBadGlob) {
			t.Errorf("CompileGlob(%q) = %v, want ErrBadGlob", p, err)
		}
	}
	long := make([]byte, maxGlobLength+1)
	for i := range long {
		long[i] = 'a'
	}
	if _, err := CompileGlob(string(long)); !errors.Is(err, ErrBadGlob) {
		t.Errorf("a %d-byte pattern: %v, want ErrBadGlob", len(long), err)
	}
}
