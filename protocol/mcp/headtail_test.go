package mcp

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/draftfs/draftfs/protocol/mcp/internal/peers"
	"github.com/draftfs/draftfs/protocol/mcp/internal/reference"
)

// TestHeadTailMatchReference compares headLines and tailLines with the
// reference's own headFile and tailFile over files whose lines cross its
// 1 KiB read blocks, with CRLF, multi-byte text and fractional counts.
func TestHeadTailMatchReference(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	type tc struct {
		Path string  `json:"path"`
		N    float64 `json:"n"`
	}
	var cases []tc
	contents := map[string][]byte{}
	pieces := []string{"a", "bb", "ü", "€", "😀", " ", "\t", strings.Repeat("x", 700), "\xe9", "\xe2\x82", "\xf0\x9f\x98", "\xed\xa0\x80", "\xff", "\xc0\xaf"}
	for i := range 60 {
		var b strings.Builder
		for range r.IntN(80) {
			for range r.IntN(6) {
				b.WriteString(pieces[r.IntN(len(pieces))])
			}
			switch r.IntN(8) {
			case 0:
				b.WriteString("\r\n")
			case 1:
				b.WriteString("\n\n")
			default:
				b.WriteString("\n")
			}
		}
		if r.IntN(3) == 0 {
			b.WriteString("tail without newline")
		}
		p := filepath.Join(dir, fmt.Sprintf("f%d", i))
		contents[p] = []byte(b.String())
		if err := os.WriteFile(p, contents[p], 0o644); err != nil {
			t.Fatal(err)
		}
		for _, n := range []float64{1, 2, 3, 5, 10, 50, 1000, 1.5, 2.7, float64(r.IntN(100) + 1)} {
			cases = append(cases, tc{p, n})
		}
	}
	in, _ := json.Marshal(cases)
	out := peers.RunNode(t, `
import { headFile, tailFile } from "@modelcontextprotocol/server-filesystem/dist/lib.js";
import { readFileSync } from "node:fs";
const cases = JSON.parse(readFileSync(0, "utf8"));
const out = [];
for (const c of cases) out.push([await headFile(c.path, c.n), await tailFile(c.path, c.n)]);
console.log(JSON.stringify(out));
`, in)
	var want [][2]string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		h, _ := headLines(contents[c.Path], c.N)
		tl, _ := tailLines(contents[c.Path], c.N)
		h, tl = reference.JSText([]byte(h)), reference.JSText([]byte(tl))
		if h != want[i][0] {
			t.Errorf("head %v of %q:\ngot  %q\nwant %q", c.N, contents[c.Path], h, want[i][0])
		}
		if tl != want[i][1] {
			t.Errorf("tail %v of %q:\ngot  %q\nwant %q", c.N, contents[c.Path], tl, want[i][1])
		}
	}
}
