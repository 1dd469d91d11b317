package reference

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/draftfs/draftfs/protocol/mcp/internal/peers"
)

// editCase is one file and the edits applied to it.
type editCase struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Edits   []Edit `json:"edits"`
}

// randomEditCases builds files from a small vocabulary (so lines repeat
// and diffs are ambiguous) and edits that match exactly, match only with
// other white space, or do not match.
func randomEditCases(r *rand.Rand, dir string, n int) []editCase {
	words := []string{"alpha", "beta", "gamma", "{", "}", "return x", "", "if y {", "x := 1", "// note"}
	indents := []string{"", "  ", "    ", "\t", "\t\t"}
	var cases []editCase
	for i := range n {
		var lines []string
		for range r.IntN(30) {
			lines = append(lines, indents[r.IntN(len(indents))]+words[r.IntN(len(words))])
		}
		eol := "\n"
		if r.IntN(5) == 0 {
			eol = "\r\n"
		}
		content := strings.Join(lines, eol)
		if r.IntN(3) > 0 {
			content += eol
		}
		var edits []Edit
		for range 1 + r.IntN(3) {
			var old string
			switch {
			case len(lines) == 0 || r.IntN(6) == 0:
				old = "no such text"
			default:
				a := r.IntN(len(lines))
				b := min(len(lines), a+1+r.IntN(4))
				seg := append([]string(nil), lines[a:b]...)
				if r.IntN(2) == 0 {
					for k := range seg {
						seg[k] = indents[r.IntN(len(indents))] + strings.TrimSpace(seg[k]) + strings.Repeat(" ", r.IntN(2))
					}
				}
				old = strings.Join(seg, "\n")
			}
			var newLines []string
			for range r.IntN(4) {
				newLines = append(newLines, indents[r.IntN(len(indents))]+words[r.IntN(len(words))]+" new")
			}
			edits = append(edits, Edit{OldText: old, NewText: strings.Join(newLines, "\n")})
		}
		cases = append(cases, editCase{Path: filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), Content: content, Edits: edits})
	}
	return cases
}

// TestEditMatchesReference applies random edits with ApplyEdits and with
// the reference server's own applyFileEdits (dry run) and compares the
// diff text, byte for byte, and the errors.
func TestEditMatchesReference(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	cases := randomEditCases(r, dir, 300)
	cases = append(cases,
		editCase{Path: filepath.Join(dir, "empty.txt"), Content: "", Edits: []Edit{{OldText: "", NewText: "start\n"}}},
		editCase{Path: filepath.Join(dir, "fence.txt"), Content: "a\n```\nb\n", Edits: []Edit{{OldText: "b", NewText: "````"}}},
		editCase{Path: filepath.Join(dir, "same.txt"), Content: "a\nb\n", Edits: []Edit{{OldText: "a", NewText: "a"}}},
		editCase{Path: filepath.Join(dir, "nbsp.txt"), Content: "\u00a0x\n\u3000y\n", Edits: []Edit{{OldText: "x\ny", NewText: "  z\n    w"}}},
	)
	for _, c := range cases {
		if err := os.WriteFile(c.Path, []byte(c.Content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in, _ := json.Marshal(cases)
	out := peers.RunNode(t, `
import { applyFileEdits } from "@modelcontextprotocol/server-filesystem/dist/lib.js";
import { readFileSync } from "node:fs";
const cases = JSON.parse(readFileSync(0, "utf8"));
const out = [];
for (const c of cases) {
  try { out.push({ text: await applyFileEdits(c.path, c.edits, true) }); }
  catch (e) { out.push({ error: e.message }); }
}
console.log(JSON.stringify(out));
`, in)
	var want []struct {
		Text  string `json:"text"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		before, after, err := ApplyEdits(c.Content, c.Edits)
		var got, gotErr string
		if err != nil {
			gotErr = err.Error()
		} else {
			got = EditResult(UnifiedDiff(c.Path, before, after))
		}
		if got != want[i].Text || gotErr != want[i].Error {
			t.Errorf("case %d: content %q edits %q\ngot  %q %q\nwant %q %q", i, c.Content, c.Edits, got, gotErr, want[i].Text, want[i].Error)
		}
	}
}
