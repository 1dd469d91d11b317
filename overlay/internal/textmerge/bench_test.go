package textmerge

import (
	"bytes"
	"fmt"
	"testing"
)

// benchFile returns about 1 MiB of source-like lines, and the line indexes
// of 10 scattered edits: even ones for ours, odd ones for theirs.
func benchFile() (lines [][]byte, at []int) {
	for i := 0; ; i++ {
		l := fmt.Appendf(nil, "\tvalue%06d := compute(%d, \"some moderately long argument\") // note\n", i, i%97)
		if i%40 == 0 {
			l = fmt.Appendf(nil, "func step%06d() {\n", i)
		}
		lines = append(lines, l)
		if i*len(l) >= 1<<20 {
			break
		}
	}
	for i := range 10 {
		at = append(at, (2*i+1)*len(lines)/21)
	}
	return lines, at
}

// edited returns lines joined, with each line at the given indexes
// replaced.
func edited(lines [][]byte, at []int) []byte {
	out := make([][]byte, len(lines))
	copy(out, lines)
	for _, i := range at {
		out[i] = fmt.Appendf(nil, "\tedited line %d\n", i)
	}
	return bytes.Join(out, nil)
}

func BenchmarkUnified(b *testing.B) {
	lines, at := benchFile()
	old, new := bytes.Join(lines, nil), edited(lines, at)
	b.SetBytes(int64(len(old)))
	b.ReportAllocs()
	for b.Loop() {
		if Unified("f.go", "f.go", old, new, true, true) == "" {
			b.Fatal("no diff")
		}
	}
}

func BenchmarkMerge(b *testing.B) {
	lines, at := benchFile()
	var oursAt, theirsAt []int
	for i, a := range at {
		if i%2 == 0 {
			oursAt = append(oursAt, a)
		} else {
			theirsAt = append(theirsAt, a)
		}
	}
	base, ours, theirs := bytes.Join(lines, nil), edited(lines, oursAt), edited(lines, theirsAt)
	want := edited(lines, at)
	b.SetBytes(int64(len(base)))
	b.ReportAllocs()
	for b.Loop() {
		if got, clean := Merge(base, ours, theirs); !clean || !bytes.Equal(got, want) {
			b.Fatal("merge went wrong")
		}
	}
}
