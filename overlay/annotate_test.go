//go:build linux

package overlay

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/afero"
)

// TestAnnotate: each hunk of the diff names the checkpoint that last
// wrote its lines, and who: the process through the mount, the MCP
// client, the ACP agent of a step; changes made since the last
// checkpoint name checkpoint 0.
func TestAnnotate(t *testing.T) {
	root := t.TempDir()
	var lines []string
	for i := 1; i <= 40; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	must(t, os.WriteFile(filepath.Join(root, "f"), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	w, err := Open(Options{Root: root, StateDir: t.TempDir()})
	must(t, err)
	defer w.Close()
	d, _ := w.Draft("")
	edit := func(f *Fs, fn func(l []string) []string) {
		t.Helper()
		b, err := afero.ReadFile(f, "f")
		must(t, err)
		l := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		must(t, afero.WriteFile(f, "f", []byte(strings.Join(fn(l), "\n")+"\n"), 0o644))
	}
	set := func(n int, s string) func([]string) []string {
		return func(l []string) []string { l[n-1] = s; return l }
	}

	mcp := Author{Source: SourceMCP, Name: "c1"}
	end := d.BeginStep(mcp, "tools/call")
	edit(d.Fs(SourceMCP), set(3, "A3"))
	edit(d.Fs(SourceMCP), set(35, "A35"))
	cpA, err := end()
	must(t, err)

	sh := d.Fs(SourceMount).As("sh -c edit")
	edit(sh, set(3, "B3"))
	edit(sh, func(l []string) []string { return slices.Delete(l, 27, 28) }) // line 28
	cpB, err := d.Checkpoint(Author{Source: SourceMount, Name: "sh"}, "run: sh")
	must(t, err)

	acp := Author{Source: SourceACP, Name: "agent", Session: "s1"}
	end = d.BeginStep(acp, "session/prompt")
	edit(d.Fs(SourceACP), func(l []string) []string { return slices.Insert(l, 20, "C1", "C2") })
	cpC, err := end()
	must(t, err)

	edit(d.Fs(SourceMount).As("vim f"), set(12, "P12"))

	diffs, err := d.DiffWith(DiffOptions{Annotate: true})
	must(t, err)
	if len(diffs) != 1 {
		t.Fatalf("diffs: %+v", diffs)
	}
	want := map[int]Annotation{ // by the hunk's first old line
		3:  {cpB.ID, Author{Source: SourceMount, Name: "sh -c edit"}},
		12: {0, Author{Source: SourceMount, Name: "vim f"}},
		21: {cpC.ID, acp},
		28: {cpB.ID, Author{Source: SourceMount, Name: "sh -c edit"}},
		35: {cpA.ID, mcp},
	}
	got := map[int]*Annotation{} // by the first old line of each change
	for _, h := range diffs[0].Hunks {
		parts := h.Parts
		if parts == nil {
			parts = []Hunk{h}
		}
		for _, p := range parts {
			got[p.OldStart] = p.Annotation
		}
	}
	if len(got) != len(want) {
		t.Errorf("changes at %v, want at 3, 12, 21, 28, 35", slices.Sorted(maps.Keys(got)))
	}
	for line, a := range want {
		if g := got[line]; g == nil || *g != a {
			t.Errorf("the change at line %d: %+v, want %+v", line, g, a)
		}
	}
}

// TestAnnotateHandleAcrossSteps: what a handle opened in one step writes
// in the next is that step's change, by the handle's process (two runs
// at once: one run's step ends while a process of the other, which
// created the file in the first step, is still writing it).
func TestAnnotateHandleAcrossSteps(t *testing.T) {
	w, err := Open(Options{Root: t.TempDir(), StateDir: t.TempDir()})
	must(t, err)
	defer w.Close()
	d, _ := w.Draft("")
	cp := d.Fs(SourceMount).As("cp b.txt b2.txt")
	f, err := cp.Create("b2.txt")
	must(t, err)
	defer f.Close()
	first, err := d.Checkpoint(Author{Source: SourceMount, Name: "sh"}, "run: sh")
	must(t, err)
	for range 2 { // the second write coalesces
		if _, err := f.WriteString("b\n"); err != nil {
			t.Fatal(err)
		}
	}
	second, err := d.Checkpoint(Author{Source: SourceMount, Name: "sh"}, "run: sh")
	must(t, err)
	if first == nil || second == nil {
		t.Fatalf("checkpoints %v, %v: want two", first, second)
	}
	log, err := d.Log()
	must(t, err)
	writes := log[first.LogEnd:second.LogEnd]
	if len(writes) != 1 || writes[0].Op != "write" || writes[0].Path != "b2.txt" || writes[0].By != "cp b.txt b2.txt" {
		t.Errorf("the second step's log: %+v, want one write of b2.txt by cp", writes)
	}
	diffs, err := d.DiffWith(DiffOptions{Annotate: true})
	must(t, err)
	want := Annotation{Checkpoint: second.ID, Author: Author{Source: SourceMount, Name: "cp b.txt b2.txt"}}
	if len(diffs) != 1 || len(diffs[0].Hunks) != 1 || diffs[0].Hunks[0].Annotation == nil || *diffs[0].Hunks[0].Annotation != want {
		t.Fatalf("diff --annotate: %+v, want one hunk by %+v", diffs, want)
	}
}
