package buffers

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// codeText returns n bytes of source-like lines, with some non-ASCII so
// the UTF-16 paths do real work.
func codeText(n int) []byte {
	const line = "\tif err := process(ctx, item); err != nil { return fmt.Errorf(\"é: %w\", err) } // 中文\n"
	b := bytes.Repeat([]byte(line), n/len(line)+1)
	return b[:n]
}

func openBig(b *testing.B) (*Set, int) {
	s := NewSet()
	text := codeText(10 << 20)
	if err := s.Open("big.go", 1, text); err != nil {
		b.Fatal(err)
	}
	return s, bytes.Count(text, []byte{'\n'})
}

// BenchmarkEditSmall10MiB: one-character inserts at random lines of a
// 10 MiB buffer (UTF-16 positions, as most editors send).
func BenchmarkEditSmall10MiB(b *testing.B) {
	s, lines := openBig(b)
	r := rand.New(rand.NewPCG(1, 1))
	v := int64(1)
	b.ReportAllocs()
	for b.Loop() {
		v++
		line := r.IntN(lines)
		if _, err := s.Edit("big.go", v, UTF16, []Edit{ed(line, 20, line, 20, "x")}, -1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEdits10000: 10,000 incremental edits, as typing sends them
// (a character at the cursor, a newline every 60, a backspace every 7),
// into a 1 MiB buffer. One op is the whole 10,000.
func BenchmarkEdits10000(b *testing.B) {
	text := codeText(1 << 20)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		s := NewSet()
		if err := s.Open("f.go", 1, text); err != nil {
			b.Fatal(err)
		}
		line, col := 5000, 10
		b.StartTimer()
		for v := int64(2); v < 10002; v++ {
			var e Edit
			switch {
			case v%60 == 0:
				e = ed(line, col, line, col, "\n")
				line, col = line+1, 0
			case v%7 == 0 && col > 0:
				e = ed(line, col-1, line, col, "")
				col--
			default:
				e = ed(line, col, line, col, "a")
				col++
			}
			if _, err := s.Edit("f.go", v, UTF16, []Edit{e}, -1); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10000, "ns/edit")
}

// BenchmarkEditLongLine: inserts at random UTF-16 columns of a 10 MiB
// text with no line breaks (minified code): finding the column must not
// scan the line.
func BenchmarkEditLongLine(b *testing.B) {
	s := NewSet()
	text := bytes.ReplaceAll(codeText(10<<20), []byte{'\n'}, []byte{' '})
	if err := s.Open("min.js", 1, text); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 3))
	v := int64(1)
	b.ReportAllocs()
	for b.Loop() {
		v++
		col := r.IntN(len(text) / 2)
		if _, err := s.Edit("min.js", v, UTF16, []Edit{ed(0, col, 0, col, "x")}, -1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetAfterEdit: an edit, then a Get that must copy the 10 MiB.
func BenchmarkGetAfterEdit(b *testing.B) {
	s, lines := openBig(b)
	r := rand.New(rand.NewPCG(1, 2))
	v := int64(1)
	b.ReportAllocs()
	for b.Loop() {
		v++
		line := r.IntN(lines)
		if _, err := s.Edit("big.go", v, UTF16, []Edit{ed(line, 3, line, 4, "y")}, -1); err != nil {
			b.Fatal(err)
		}
		if snap, _ := s.Get("big.go"); len(snap.Text) != 10<<20 {
			b.Fatal(len(snap.Text))
		}
	}
}

// BenchmarkGetCached: Get with no change since the last one.
func BenchmarkGetCached(b *testing.B) {
	s, _ := openBig(b)
	b.ReportAllocs()
	for b.Loop() {
		s.Get("big.go")
	}
}

// BenchmarkOpen10MiB: copying, chunking and measuring a 10 MiB text.
func BenchmarkOpen10MiB(b *testing.B) {
	text := codeText(10 << 20)
	s := NewSet()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Open("big.go", 1, text); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemoryPerBuffer reports the live heap per buffer for 1,000
// buffers of 4 KiB: just opened, and after an edit and a Get each (the
// steady state of a buffer being typed in and read).
func BenchmarkMemoryPerBuffer(b *testing.B) {
	const n, size = 1000, 4 << 10
	text := codeText(size)
	var opened, edited float64
	for b.Loop() {
		base := liveHeap()
		s := NewSet()
		for i := range n {
			if err := s.Open(fmt.Sprintf("src/pkg%d/file%d.go", i/10, i), 1, text); err != nil {
				b.Fatal(err)
			}
		}
		opened = float64(liveHeap()-base) / n
		for _, info := range s.List() {
			if _, err := s.Edit(info.Path, 2, UTF16, []Edit{ed(10, 5, 10, 5, "edit")}, -1); err != nil {
				b.Fatal(err)
			}
			s.Get(info.Path)
		}
		edited = float64(liveHeap()-base) / n
		runtime.KeepAlive(s)
	}
	b.ReportMetric(opened, "bytes/buffer")
	b.ReportMetric(edited, "bytes/edited-buffer")
}

func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
