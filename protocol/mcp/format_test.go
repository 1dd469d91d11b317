package mcp

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	out := runNode(t, `
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
		h, tl = jsText([]byte(h)), jsText([]byte(tl))
		if h != want[i][0] {
			t.Errorf("head %v of %q:\ngot  %q\nwant %q", c.N, contents[c.Path], h, want[i][0])
		}
		if tl != want[i][1] {
			t.Errorf("tail %v of %q:\ngot  %q\nwant %q", c.N, contents[c.Path], tl, want[i][1])
		}
	}
}

// TestFormatMatchesReference compares formatSize with the reference's,
// names ordered by localeCompare, and Date.toString in UTC.
func TestFormatMatchesReference(t *testing.T) {
	sizes := []int64{0, 1, 1023, 1024, 1025, 1152, 1536, 1048575, 1048576, 1572864, 1073741824, 1 << 40, 1 << 50, 5*1024 + 5, 10239, 2560, 1126, 999999999}
	names := []string{"a.txt", "B.txt", "a_b.txt", "a-b.txt", "_under", "10.txt", "9.txt", "Zeta", "zeta", "é.txt", "e.txt", "f.txt", ".hidden", "A", "a", "ä", "ß", "ss", "日本", "~x", "a b"}
	times := []int64{0, 1700000000123, 1234567890000}
	in, _ := json.Marshal(map[string]any{"sizes": sizes, "names": names, "times": times})
	out := runNode(t, `
import { formatSize } from "@modelcontextprotocol/server-filesystem/dist/lib.js";
import { readFileSync } from "node:fs";
const { sizes, names, times } = JSON.parse(readFileSync(0, "utf8"));
console.log(JSON.stringify({
  sizes: sizes.map(formatSize),
  names: [...names].sort((a, b) => a.localeCompare(b)),
  times: times.map(ms => `+"`${new Date(ms)}`"+`),
}));
`, in)
	var want struct {
		Sizes []string `json:"sizes"`
		Names []string `json:"names"`
		Times []string `json:"times"`
	}
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for i, n := range sizes {
		if got := formatSize(n); got != want.Sizes[i] {
			t.Errorf("formatSize(%d) = %q, the reference %q", n, got, want.Sizes[i])
		}
	}
	sorted := append([]string(nil), names...)
	for i := range sorted {
		for j := i + 1; j < len(sorted); j++ {
			if localeCompare(sorted[j], sorted[i]) < 0 {
				sorted[i], sorted[j] = sorted[j], sorted[i]
			}
		}
	}
	if strings.Join(sorted, "|") != strings.Join(want.Names, "|") {
		t.Errorf("names sorted\n%q\nlocaleCompare sorts\n%q", sorted, want.Names)
	}
	if time.Local.String() == "UTC" || time.Local.String() == "Local" && time.Now().Format("MST") == "UTC" {
		for i, ms := range times {
			if got := jsDate(time.UnixMilli(ms)); got != want.Times[i] {
				t.Errorf("jsDate(%d) = %q, JavaScript %q", ms, got, want.Times[i])
			}
		}
	} else {
		t.Logf("local time zone %s: Date.toString not compared (node runs in the machine's zone)", time.Local)
	}
}

// TestJSTextMatchesNode decodes random bytes as Node does.
func TestJSTextMatchesNode(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte{'a', '\n', 0x80, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0, 0xe1, 0xed, 0xef, 0xf0, 0xf1, 0xf4, 0xf5, 0xff}
	var inputs [][]byte
	for range 2000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		inputs = append(inputs, b)
	}
	in, _ := json.Marshal(inputs) // []byte as base64
	out := runNode(t, `
import { readFileSync } from "node:fs";
const inputs = JSON.parse(readFileSync(0, "utf8"));
console.log(JSON.stringify(inputs.map(s => Buffer.from(s, "base64").toString("utf8"))));
`, in)
	var want []string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for i, b := range inputs {
		if got := jsText(b); got != want[i] {
			t.Errorf("jsText(% x) = %q, Node %q", b, got, want[i])
		}
	}
}
