package lines

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// Lines come out whole, whatever their length against the read buffer,
// their ending or the limit.
func TestNext(t *testing.T) {
	long := strings.Repeat("0123456789", 30_000) // several read buffers
	in := "a\r\n\n" + long + "\n" + "x" + long + "\n" + "b\r\n" + long[:100] + "tail"
	r := NewReader(strings.NewReader(in), len(long))
	want := []struct {
		line    string
		tooLong bool
	}{{"a", false}, {"", false}, {long, false}, {"", true}, {"b", false}, {long[:100] + "tail", false}}
	for i, w := range want {
		line, err := r.Next()
		switch {
		case w.tooLong:
			if !errors.Is(err, ErrTooLong) {
				t.Fatalf("line %d: %v, want ErrTooLong", i, err)
			}
			if h := string(r.Head()); h != ("x" + long)[:HeadSize] {
				t.Errorf("line %d: head of %d bytes, not the line's start", i, len(h))
			}
		case err != nil:
			t.Fatalf("line %d: %v", i, err)
		case string(line) != w.line:
			t.Errorf("line %d: %d bytes %.20q, want %d bytes %.20q", i, len(line), line, len(w.line), w.line)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("at the end: %v, want io.EOF", err)
	}
}

// A line longer than the read buffer costs its size once more, not the
// slack of a buffer grown by doubling.
func TestNextExactBuffer(t *testing.T) {
	line := strings.Repeat("y", 5<<20+1)
	r := NewReader(strings.NewReader(line+"\n"), 8<<20)
	got, err := r.Next()
	if err != nil || string(got) != line {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
	if cap(got) != len(line)+1 {
		t.Errorf("a %d-byte line in a buffer of %d", len(line), cap(got))
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatal(err)
	}
	if r.buf != nil {
		t.Errorf("a buffer of %d bytes is kept after the line", cap(r.buf))
	}
}

// A released line stays as it was while the next lines are read.
func TestRelease(t *testing.T) {
	r := NewReader(strings.NewReader("first\nxy\n"), 100)
	first, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
	if second, err := r.Next(); err != nil || string(second) != "xy" {
		t.Fatalf("%q, %v", second, err)
	}
	if string(first) != "first" {
		t.Errorf("the released line reads %q after the next one", first)
	}
}
