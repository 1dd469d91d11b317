package reference

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/draftfs/draftfs/protocol/mcp/internal/peers"
)

// TestFormatMatchesReference compares FormatSize with the reference's,
// names ordered by LocaleCompare, and Date.toString in UTC.
func TestFormatMatchesReference(t *testing.T) {
	sizes := []int64{0, 1, 1023, 1024, 1025, 1152, 1536, 1048575, 1048576, 1572864, 1073741824, 1 << 40, 1 << 50, 5*1024 + 5, 10239, 2560, 1126, 999999999}
	names := []string{"a.txt", "B.txt", "a_b.txt", "a-b.txt", "_under", "10.txt", "9.txt", "Zeta", "zeta", "é.txt", "e.txt", "f.txt", ".hidden", "A", "a", "ä", "ß", "ss", "日本", "~x", "a b"}
	times := []int64{0, 1700000000123, 1234567890000}
	in, _ := json.Marshal(map[string]any{"sizes": sizes, "names": names, "times": times})
	out := peers.RunNode(t, `
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
		if got := FormatSize(n); got != want.Sizes[i] {
			t.Errorf("FormatSize(%d) = %q, the reference %q", n, got, want.Sizes[i])
		}
	}
	sorted := append([]string(nil), names...)
	for i := range sorted {
		for j := i + 1; j < len(sorted); j++ {
			if LocaleCompare(sorted[j], sorted[i]) < 0 {
				sorted[i], sorted[j] = sorted[j], sorted[i]
			}
		}
	}
	if strings.Join(sorted, "|") != strings.Join(want.Names, "|") {
		t.Errorf("names sorted\n%q\nlocaleCompare sorts\n%q", sorted, want.Names)
	}
	if time.Local.String() == "UTC" || time.Local.String() == "Local" && time.Now().Format("MST") == "UTC" {
		for i, ms := range times {
			if got := JSDate(time.UnixMilli(ms)); got != want.Times[i] {
				t.Errorf("JSDate(%d) = %q, JavaScript %q", ms, got, want.Times[i])
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
	out := peers.RunNode(t, `
import { readFileSync } from "node:fs";
const inputs = JSON.parse(readFileSync(0, "utf8"));
console.log(JSON.stringify(inputs.map(s => Buffer.from(s, "base64").toString("utf8"))));
`, in)
	var want []string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for i, b := range inputs {
		if got := JSText(b); got != want[i] {
			t.Errorf("JSText(% x) = %q, Node %q", b, got, want[i])
		}
	}
}
