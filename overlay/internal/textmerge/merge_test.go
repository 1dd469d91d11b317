package textmerge

import (
	"testing"
)

// conflict builds the text git merge-file --diff3 writes for one
// conflicting region, each part given as whole lines.
func conflict(nl string, ours, base, theirs string) string {
	return "<<<<<<< ours" + nl + ours + "||||||| base" + nl + base + "=======" + nl + theirs + ">>>>>>> theirs" + nl
}

type mergeCase struct {
	name               string
	base, ours, theirs string
	want               string
	clean              bool
	// git tells how git merge-file relates: gitSame means the same text
	// and the same verdict; gitConflicts means git conflicts where this
	// package, by design, merges cleanly.
	git gitVerdict
}

type gitVerdict int

const (
	gitSame gitVerdict = iota
	gitConflicts
)

var mergeCases = []mergeCase{
	{
		name:   "clean non-overlapping edits",
		base:   "1\n2\n3\n4\n5\n6\n7\n8\n9\n",
		ours:   "1\nTWO\n3\n4\n5\n6\n7\n8\n9\n",
		theirs: "1\n2\n3\n4\n5\n6\n7\nEIGHT\n9\n",
		want:   "1\nTWO\n3\n4\n5\n6\n7\nEIGHT\n9\n",
		clean:  true,
	},
	{
		name:   "identical edits both sides",
		base:   "1\n2\n3\n4\n5\n6\n7\n8\n9\n",
		ours:   "ONE\n2\n3\n4\nFIVE\n6\n7\n8\n9\n",
		theirs: "1\n2\n3\n4\nFIVE\n6\n7\n8\nNINE\n",
		want:   "ONE\n2\n3\n4\nFIVE\n6\n7\n8\nNINE\n",
		clean:  true,
	},
	{
		name:   "identical insertion both sides",
		base:   "1\n2\n3\n4\n5\n6\n",
		ours:   "0\n1\n2\n3\nnew\n4\n5\n6\n",
		theirs: "1\n2\n3\nnew\n4\n5\n6\n",
		want:   "0\n1\n2\n3\nnew\n4\n5\n6\n",
		clean:  true,
	},
	{
		name:   "both delete the same line",
		base:   "1\n2\n3\n4\n5\n6\n7\n",
		ours:   "1\n2\n4\n5\n6\n7\nours\n",
		theirs: "1\n2\n4\n5\n6\n7\n",
		want:   "1\n2\n4\n5\n6\n7\nours\n",
		clean:  true,
	},
	{
		name:   "overlapping conflict",
		base:   "1\n2\n3\n4\n5\n6\n7\n8\n9\n",
		ours:   "1\n2\n3\nO4\nO5\n6\n7\n8\n9\n",
		theirs: "1\n2\n3\n4\nT5\nT6\n7\n8\n9\n",
		want:   "1\n2\n3\n" + conflict("\n", "O4\nO5\n6\n", "4\n5\n6\n", "4\nT5\nT6\n") + "7\n8\n9\n",
	},
	{
		name:   "conflict between clean changes",
		base:   "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n",
		ours:   "ONE\n2\n3\n4\n5\nours\n7\n8\n9\n10\n11\n",
		theirs: "1\n2\n3\n4\n5\ntheirs\n7\n8\n9\n10\nELEVEN\n",
		want:   "ONE\n2\n3\n4\n5\n" + conflict("\n", "ours\n", "6\n", "theirs\n") + "7\n8\n9\n10\nELEVEN\n",
	},
	{
		name:   "chained overlaps form one region",
		base:   "1\n2\n3\n4\n5\n6\n7\n8\n9\n",
		ours:   "1\nO2\nO3\n4\nO5\nO6\n7\n8\n9\n",
		theirs: "1\n2\nT3\nT4\nT5\n6\n7\n8\n9\n",
		want:   "1\n" + conflict("\n", "O2\nO3\n4\nO5\nO6\n", "2\n3\n4\n5\n6\n", "2\nT3\nT4\nT5\n6\n") + "7\n8\n9\n",
	},
	{
		name:   "one side unchanged",
		base:   "a\nb\nc\n",
		ours:   "a\nb\nc\n",
		theirs: "a\nB\nc\nd",
		want:   "a\nB\nc\nd",
		clean:  true,
	},
	{
		name:   "deletion vs edit",
		base:   "1\n2\n3\n4\n5\n",
		ours:   "1\n2\n4\n5\n",
		theirs: "1\n2\nTHREE\n4\n5\n",
		want:   "1\n2\n" + conflict("\n", "", "3\n", "THREE\n") + "4\n5\n",
	},
	{
		name:   "overlapping deletions",
		base:   "1\n2\n3\n4\n5\n6\n",
		ours:   "1\n4\n5\n6\n",
		theirs: "1\n2\n5\n6\n",
		want:   "1\n" + conflict("\n", "4\n", "2\n3\n4\n", "2\n") + "5\n6\n",
	},
	{
		name:   "insertion at the same point",
		base:   "a\nb\nc\n",
		ours:   "a\nours\nb\nc\n",
		theirs: "a\ntheirs\nb\nc\n",
		want:   "a\n" + conflict("\n", "ours\n", "", "theirs\n") + "b\nc\n",
	},
	{
		name:   "insertion inside the other side's range",
		base:   "1\n2\n3\n4\n5\n6\n",
		ours:   "1\n5\n6\n",
		theirs: "1\n2\n3\nnew\n4\n5\n6\n",
		want:   "1\n" + conflict("\n", "", "2\n3\n4\n", "2\n3\nnew\n4\n") + "5\n6\n",
	},
	{
		name:   "ours deletes everything, theirs edits",
		base:   "a\nb\n",
		ours:   "",
		theirs: "a\nB\n",
		want:   conflict("\n", "", "a\nb\n", "a\nB\n"),
	},
	{
		name:   "adjacent edits",
		base:   "1\n2\n3\n4\n5\n",
		ours:   "1\n2\nTHREE\n4\n5\n",
		theirs: "1\n2\n3\nFOUR\n5\n",
		want:   "1\n2\nTHREE\nFOUR\n5\n",
		clean:  true,
		git:    gitConflicts,
	},
	{
		name:   "insertion where the other side's range starts",
		base:   "1\n2\n3\n4\n",
		ours:   "1\nnew\n2\n3\n4\n",
		theirs: "1\nTWO\n3\n4\n",
		want:   "1\nnew\nTWO\n3\n4\n",
		clean:  true,
		git:    gitConflicts,
	},
	{
		name:   "insertion where the other side's deletion ends",
		base:   "1\n2\n3\n4\n",
		ours:   "1\n4\n",
		theirs: "1\n2\n3\nnew\n4\n",
		want:   "1\nnew\n4\n",
		clean:  true,
		git:    gitConflicts,
	},
	{
		name:   "crlf without final newline, edits at top and bottom",
		base:   "l1\r\nl2\r\nl3\r\nl4",
		ours:   "L1\r\nl2\r\nl3\r\nl4",
		theirs: "l1\r\nl2\r\nl3\r\nL4",
		want:   "L1\r\nl2\r\nl3\r\nL4",
		clean:  true,
	},
	{
		name:   "crlf insertion at top, append at bottom",
		base:   "a\r\nb\r\nc\r\nd\r\n",
		ours:   "top\r\na\r\nb\r\nc\r\nd\r\n",
		theirs: "a\r\nb\r\nc\r\nd\r\nbottom",
		want:   "top\r\na\r\nb\r\nc\r\nd\r\nbottom",
		clean:  true,
	},
	{
		name:   "crlf conflict markers",
		base:   "a\r\nb\r\nc\r\n",
		ours:   "a\r\nB1\r\nc\r\n",
		theirs: "a\r\nB2\r\nc\r\n",
		want:   "a\r\n" + conflict("\r\n", "B1\r\n", "b\r\n", "B2\r\n") + "c\r\n",
	},
	{
		name:   "conflict on a last line without newline",
		base:   "a\nb",
		ours:   "a\nours",
		theirs: "a\ntheirs",
		want:   "a\n" + conflict("\n", "ours\n", "b\n", "theirs\n"),
	},
	{
		name:   "crlf conflict on a last line without newline",
		base:   "a\r\nb",
		ours:   "a\r\nours",
		theirs: "a\r\ntheirs",
		want:   "a\r\n" + conflict("\r\n", "ours\r\n", "b\r\n", "theirs\r\n"),
	},
	{
		name:   "mixed line endings kept",
		base:   "a\r\nb\nc\r\nd\ne\r\nf\n",
		ours:   "A\r\nb\nc\r\nd\ne\r\nf\n",
		theirs: "a\r\nb\nc\r\nd\ne\r\nF",
		want:   "A\r\nb\nc\r\nd\ne\r\nF",
		clean:  true,
	},
	{
		name:   "line ending change conflicts with an edit",
		base:   "a\nb\nc\n",
		ours:   "a\r\nb\r\nc\r\n",
		theirs: "a\nB\nc\n",
		want:   conflict("\n", "a\r\nb\r\nc\r\n", "a\nb\nc\n", "a\nB\nc\n"),
	},
	{
		name:   "invalid utf-8 kept",
		base:   "caf\xe9\n1\n2\n3\n\xff\xfe\n",
		ours:   "caf\xe9!\n1\n2\n3\n\xff\xfe\n",
		theirs: "caf\xe9\n1\n2\n3\n\xfe\xff\n",
		want:   "caf\xe9!\n1\n2\n3\n\xfe\xff\n",
		clean:  true,
	},
	{
		name:   "empty base, one side adds",
		base:   "",
		ours:   "",
		theirs: "new\n",
		want:   "new\n",
		clean:  true,
	},
	{
		name:   "empty base, both add",
		base:   "",
		ours:   "ours\n",
		theirs: "theirs",
		want:   conflict("\n", "ours\n", "", "theirs\n"),
	},
	{
		name:   "empty base, both add the same",
		base:   "",
		ours:   "same\n",
		theirs: "same\n",
		want:   "same\n",
		clean:  true,
	},
}

// mergers are the ways in: Merge, and the line merge its shortcuts
// must agree with.
var mergers = map[string]func(base, ours, theirs []byte) ([]byte, bool){"Merge": Merge, "merge3": merge3}

func TestMerge(t *testing.T) { testMerges(t, mergeCases, mergers) }

// testMerges checks each of merges on each case.
func testMerges(t *testing.T, cases []mergeCase, merges map[string]func(base, ours, theirs []byte) ([]byte, bool)) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for name, merge := range merges {
				got, clean := merge([]byte(c.base), []byte(c.ours), []byte(c.theirs))
				if string(got) != c.want || clean != c.clean {
					t.Errorf("%s = (%q, %v), want (%q, %v)", name, got, clean, c.want, c.clean)
				}
			}
		})
	}
}

func TestMergeMatchesGit(t *testing.T) {
	requireGit(t)
	for _, c := range mergeCases {
		t.Run(c.name, func(t *testing.T) {
			got, gitClean := gitMergeFile(t, []byte(c.base), []byte(c.ours), []byte(c.theirs))
			switch c.git {
			case gitSame:
				if string(got) != c.want || gitClean != c.clean {
					t.Errorf("git merge-file = (%q, %v), want (%q, %v)", got, gitClean, c.want, c.clean)
				}
			case gitConflicts:
				if gitClean {
					t.Errorf("git merge-file merged cleanly; this case documents where git conflicts: %q", got)
				}
			}
		})
	}
}

func TestMergeBinary(t *testing.T) {
	base, x, y := "bin\x00base", "bin\x00x", "bin\x00y"
	testMerges(t, []mergeCase{
		{name: "both equal", base: base, ours: x, theirs: x, want: x, clean: true},
		{name: "ours unchanged", base: base, ours: base, theirs: y, want: y, clean: true},
		{name: "theirs unchanged", base: base, ours: x, theirs: base, want: x, clean: true},
		{name: "both changed", base: base, ours: x, theirs: y},
		{name: "text base, binary sides", base: "text\n", ours: x, theirs: y},
		{name: "binary ours only", base: "a\n", ours: "a\x00\n", theirs: "b\n"},
	}, map[string]func(base, ours, theirs []byte) ([]byte, bool){"Merge": Merge})
}

func TestMergeDoesNotAlias(t *testing.T) {
	base, ours := []byte("a\n"), []byte("b\n")
	got, _ := Merge(base, ours, base)
	got[0] = 'X'
	if string(ours) != "b\n" {
		t.Fatalf("writing the result changed the input: %q", ours)
	}
}
