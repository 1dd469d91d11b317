package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/draftfs/draftfs/overlay"
)

// TestPrintStat: bars scale to statWidth keeping a mark for any change,
// renames show both names, the summary agrees in number.
func TestPrintStat(t *testing.T) {
	var b bytes.Buffer
	printStat(&b, []overlay.FileDiff{
		{Path: "big", Added: 1000, Deleted: 10},
		{Path: "new", From: "old", Added: 1},
		{Path: "bin", Binary: true},
	}, false)
	want := " big        | 1010 " + strings.Repeat("+", 49) + "-\n" +
		" old => new |    1 +\n" +
		" bin        |  Bin\n" +
		" 3 files changed, 1001 insertions(+), 10 deletions(-)\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	printStat(&b, []overlay.FileDiff{{Path: "gone", Deleted: 1}}, false)
	if got := b.String(); got != " gone | 1 -\n 1 file changed, 1 deletion(-)\n" {
		t.Errorf("got %q", got)
	}
}

// TestProgress: on a terminal one line is redrawn and cleared; else a
// line at most a second, and always the last.
func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b, tty: true}
	p.update(1, 10) // small commits show nothing
	p.update(1, 500)
	p.update(500, 500)
	p.finish()
	if got := b.String(); got != "\rcommitting: 1/500\rcommitting: 500/500\r\x1b[K" {
		t.Errorf("terminal: %q", got)
	}
	b.Reset()
	p = &progress{w: &b}
	for i := 1; i <= 500; i++ {
		p.update(i, 500)
	}
	p.finish()
	if got := b.String(); got != "draftfs commit: 1/500\ndraftfs commit: 500/500\n" {
		t.Errorf("not a terminal: %q", got)
	}
	(*progress)(nil).finish()
}
