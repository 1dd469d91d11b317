package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
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

// TestPrintStatusOrder: lines come in path order, a directory's "/"
// included, with or without ignored entries to fold; the entries given
// are left as they were.
func TestPrintStatusOrder(t *testing.T) {
	st := []overlay.StatusEntry{ // the daemon's order: by key, "/" not yet added
		{Path: "a/", Change: overlay.StatusAdded},
		{Path: "a-b", Change: overlay.StatusAdded},
		{Path: "c", Change: overlay.StatusModified},
	}
	var b bytes.Buffer
	printStatus(&b, st, false)
	if want := "A a-b\nA a/\nM c\n"; b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if st[0].Path != "a/" {
		t.Errorf("printStatus reordered its argument: %v", st)
	}
	b.Reset()
	st = append(st, overlay.StatusEntry{Path: "d/x", Change: overlay.StatusAdded, Ignored: true, Fold: "d/"})
	printStatus(&b, st, false)
	if want := "A a-b\nA a/\nM c\nA d/ (1 file, ignored)\n"; b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestPrintJSONAsEncoder: printJSON prints byte for byte what
// json.Encoder with SetIndent printed (scripts compare it).
func TestPrintJSONAsEncoder(t *testing.T) {
	v := []any{
		overlay.StatusEntry{Path: "a<b>&c\u2028\"é", Change: overlay.StatusAdded, AlsoIn: []string{"x"}},
		map[string]any{"z": 1.5, "a": []int{}, "m": nil, "e": map[string]int{}},
		"", 0, true,
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	// status --json prints the daemon's encoding as it is.
	for _, v := range []any{v, json.RawMessage(raw)} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout := os.Stdout
		os.Stdout = w
		err = printJSON(v)
		os.Stdout = stdout
		w.Close()
		got, _ := io.ReadAll(r)
		if err != nil || string(got) != want.String() {
			t.Errorf("printJSON(%T): %v\n%s\nwant\n%s", v, err, got, want.String())
		}
	}
}
