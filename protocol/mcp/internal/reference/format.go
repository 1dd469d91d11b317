package reference

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"
)

// FormatSize is the reference's FormatSize: "0 B", "512 B", "1.50 KB",
// up to TB, with two decimals rounded as JavaScript's toFixed rounds
// (half away from zero, on the exact value).
func FormatSize(n int64) string {
	if n <= 0 {
		return "0 B"
	}
	units := []string{"B", "KB", "MB", "GB", "TB"}
	i := int(math.Floor(math.Log(float64(n)) / math.Log(1024)))
	if i <= 0 {
		return strconv.FormatInt(n, 10) + " B"
	}
	i = min(i, len(units)-1)
	// hundredths = round(n * 100 / 1024^i), halves up.
	num := new(big.Int).Mul(big.NewInt(n), big.NewInt(200))
	den := new(big.Int).Lsh(big.NewInt(1), uint(10*i))
	num.Add(num, den)
	den.Lsh(den, 1)
	h := num.Div(num, den).String()
	for len(h) < 3 {
		h = "0" + h
	}
	return h[:len(h)-2] + "." + h[len(h)-2:] + " " + units[i]
}

// JSDate formats t as JavaScript's Date.prototype.toString does in the
// local time zone: "Sun Nov 22 2026 00:33:10 GMT+0000 (Coordinated
// Universal Time)". JavaScript names the zone from ICU; Go knows only its
// abbreviation, so zones other than UTC show that.
func JSDate(t time.Time) string {
	t = t.Local()
	name, _ := t.Zone()
	if name == "UTC" || name == "GMT" {
		name = "Coordinated Universal Time"
	}
	return t.Format("Mon Jan 02 2006 15:04:05 GMT-0700") + " (" + name + ")"
}

// JSLen is a string's length in UTF-16 code units, as JavaScript counts.
func JSLen(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

func PadEnd(s string, width int) string {
	return s + strings.Repeat(" ", max(0, width-JSLen(s)))
}

func PadStart(s string, width int) string {
	return strings.Repeat(" ", max(0, width-JSLen(s))) + s
}

// collator orders names as JavaScript's LocaleCompare does with ICU's
// root collation. A Collator is not safe for concurrent use.
var collator = struct {
	sync.Mutex
	c *collate.Collator
}{c: collate.New(language.Und)}

func LocaleCompare(a, b string) int {
	collator.Lock()
	defer collator.Unlock()
	return collator.c.CompareString(a, b)
}

// JSText decodes b as Node's UTF-8 decoder does: each maximal invalid
// subpart (a cut-short sequence counts once) becomes one U+FFFD. Go's own
// conversions replace every invalid byte, which would show the client a
// different text than the reference shows.
func JSText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || n > 1 {
			sb.Write(b[i : i+n])
			i += n
			continue
		}
		sb.WriteRune(utf8.RuneError)
		i += invalidRun(b[i:])
	}
	return sb.String()
}

// invalidRun is the length of the maximal subpart of an ill-formed
// sequence at the start of b (Unicode's "U+FFFD substitution of maximal
// subparts", which the WHATWG decoder follows).
func invalidRun(b []byte) int {
	lo, hi := byte(0x80), byte(0xbf)
	need := 0
	switch c := b[0]; {
	case c >= 0xc2 && c <= 0xdf:
		need = 1
	case c == 0xe0:
		need, lo = 2, 0xa0
	case c == 0xed:
		need, hi = 2, 0x9f
	case c >= 0xe1 && c <= 0xef:
		need = 2
	case c == 0xf0:
		need, lo = 3, 0x90
	case c == 0xf4:
		need, hi = 3, 0x8f
	case c >= 0xf1 && c <= 0xf3:
		need = 3
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(b) && b[n] >= lo && b[n] <= hi; n++ {
		lo, hi = 0x80, 0xbf
	}
	return n
}
