package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/protocol/control"
)

var (
	flagDiffStat    bool
	flagDiffColor   string
	flagDiffIgnored bool
	flagDiffJSON    bool
	flagDiffAnnot   bool
)

var diffCmd = &cobra.Command{
	Use:   "diff [--stat | --json] [--annotate] [--ignored] [--color=auto|always|never] [A..B] [PATH...]",
	Short: "Show the draft's changes as a unified diff",
	Long: `Shows the draft's changes (all, or below each PATH) as a unified diff with
git-style headers (--- a/path, +++ b/path), from what you have now (the
editor buffer if one is open, else the disk) to what commit will write:
the draft's version, or, for a file you changed too, the 3-way merge of
your changes and the draft's, marked by a "# merged: ..." line before
its header (git apply and patch skip it) and "(merged)" in --stat. A
binary file is reported as "Binary files a/path and b/path differ".

Changes to what git ignores (.venv/, node_modules/, build output, git's
own .git/) are left out, with a note on stderr; --ignored shows them.

--json prints an array of {"path", "from"?, "change", "binary", "added",
"deleted", "patch", "ignored"?, "merged"?, "hunks"}: each hunk is {"id",
"text", "whole"?, "oldStart", "oldLines", "newStart", "newLines",
"parts"?} (the lines it changes, 1-based; parts are the smaller hunks
it splits into), and its id is what draftfs commit --hunk and draftfs
discard --hunk take. An id stays the same while neither the draft nor
your file changes.

--annotate marks each hunk with the checkpoint of the draft's timeline
(draftfs log) that last wrote its lines, and who: a "# checkpoint N,
AUTHOR" line before it (before the file's header for a change taken
whole), where AUTHOR is the source and the process (its command line;
for a draftfs run's processes, the command the run started), the ACP
agent and session or the MCP client; "# since the last checkpoint" for
changes not in one yet. With --json each hunk gets "annotation":
{"checkpoint", "author": {"source", "name"?, "session"?}} (checkpoint 0:
not in one yet), absent when nothing in the timeline wrote it.

A..B as the first argument compares two checkpoints of the draft's
timeline (ids from draftfs log; ..B: from what is below the draft):
what the draft changed from right after A to right after B.

--stat prints a diffstat instead. Colour is used on a terminal
(--color=auto, unless NO_COLOR is set), always, or never.`,
	Example: `  draftfs diff
  draftfs diff --stat
  draftfs diff src/main.go | less -R
  draftfs diff --color=always | less -R
  draftfs diff 3..7
  draftfs diff --annotate src/main.go
  draftfs diff --json src/main.go | jq -r '.[].hunks[].id'`,
	ValidArgsFunction: completeChanged,
	RunE: func(cmd *cobra.Command, a []string) error {
		var color bool
		switch flagDiffColor {
		case "auto":
			color = colorWanted(os.Stdout)
		case "always":
			color = true
		case "never":
		default:
			return usagef("--color must be auto, always or never, not %q", flagDiffColor)
		}
		var from, to uint64
		var ranged bool
		if len(a) > 0 {
			var err error
			if from, to, ranged, err = checkpointRange(a[0]); err != nil {
				return err
			}
			if ranged {
				a = a[1:]
			}
		}
		if ranged && flagDiffAnnot {
			return usagef("--annotate marks the draft's hunks now; it does not go with A..B (draftfs log -p shows each checkpoint's own diff)")
		}
		s, paths, err := connectFor(a, readOnly)
		if err != nil {
			return err
		}
		defer s.close()
		var diffs []overlay.FileDiff
		if ranged {
			diffs, err = s.DiffRange(s.cfg.draft, from, to, paths...)
		} else {
			diffs, err = s.Diff(s.cfg.draft, control.DiffOptions{Paths: paths, Ignored: flagDiffIgnored, Annotate: flagDiffAnnot})
		}
		if err != nil {
			return err
		}
		shown := diffs[:0]
		hidden := 0
		for _, d := range diffs {
			if d.Ignored && !flagDiffIgnored {
				hidden++
				continue
			}
			shown = append(shown, d)
		}
		diffs = shown
		if flagDiffJSON {
			return printJSON(diffs)
		}
		if hidden > 0 {
			defer fmt.Fprintf(os.Stderr, "draftfs diff: %s %s to what git ignores not shown (draftfs status folds them; draftfs diff --ignored shows them)\n",
				thousands(hidden), plural(hidden, "change", "changes"))
		}
		w := bufio.NewWriterSize(os.Stdout, 64<<10)
		if flagDiffStat {
			printStat(w, diffs, color)
		} else {
			for _, d := range diffs {
				if d.Merged {
					// Before the diff header, where git apply and patch
					// skip text.
					fmt.Fprintf(w, "# merged: you changed %s too; this is what commit writes, your changes and the draft's combined\n", d.Path)
				}
				patch := d.Patch
				if flagDiffAnnot {
					patch = annotatedPatch(d)
				}
				printPatch(w, patch, color)
			}
		}
		return w.Flush()
	},
}

func init() {
	diffCmd.Flags().BoolVar(&flagDiffStat, "stat", false, "print a diffstat instead of the diff")
	diffCmd.Flags().BoolVar(&flagDiffJSON, "json", false, "print the changes and their hunks (with the ids commit --hunk takes) as JSON")
	diffCmd.Flags().StringVar(&flagDiffColor, "color", "auto", "colour the output: auto, always or never")
	diffCmd.Flags().BoolVar(&flagDiffAnnot, "annotate", false, "mark each hunk with the checkpoint and author that last wrote it")
	diffCmd.Flags().BoolVar(&flagDiffIgnored, "ignored", false, "show changes to what git ignores (and .git/) too")
	diffCmd.RegisterFlagCompletionFunc("color", cobra.FixedCompletions([]string{"auto", "always", "never"}, cobra.ShellCompDirectiveNoFileComp))
	root.AddCommand(diffCmd)
}

// annotatedPatch is a file's patch with a "# checkpoint N, AUTHOR" line
// before each hunk (before the header for a change taken whole).
func annotatedPatch(d overlay.FileDiff) string {
	if len(d.Hunks) == 0 {
		return d.Patch
	}
	if d.Hunks[0].Whole {
		return annotation(d.Hunks[0].Annotation) + d.Patch
	}
	var b strings.Builder
	i := 0
	for _, line := range strings.SplitAfter(d.Patch, "\n") {
		if strings.HasPrefix(line, "@@") && i < len(d.Hunks) {
			b.WriteString(annotation(d.Hunks[i].Annotation))
			i++
		}
		b.WriteString(line)
	}
	return b.String()
}

// annotation is the line that says who last wrote a hunk.
func annotation(a *overlay.Annotation) string {
	switch {
	case a == nil:
		return "# not written by a step of the draft's timeline\n"
	case a.Checkpoint == 0 && a.Author.Source == "":
		return "# since the last checkpoint\n"
	case a.Checkpoint == 0:
		return fmt.Sprintf("# since the last checkpoint, %s\n", a.Author)
	default:
		return fmt.Sprintf("# checkpoint %d, %s\n", a.Checkpoint, a.Author)
	}
}

// ANSI colours, as git uses them.
const (
	ansiBold  = "\x1b[1m"
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiCyan  = "\x1b[36m"
	ansiReset = "\x1b[m"
)

// printPatch prints one file's patch, coloured like git's: headers bold,
// hunk headers cyan, removed lines red, added lines green.
func printPatch(w io.Writer, patch string, color bool) {
	if !color {
		io.WriteString(w, patch)
		return
	}
	header := true
	for len(patch) > 0 {
		line, rest, _ := strings.Cut(patch, "\n")
		patch = rest
		c := ""
		switch {
		case strings.HasPrefix(line, "diff --git "):
			header, c = true, ansiBold
		case strings.HasPrefix(line, "@@"):
			header, c = false, ansiCyan
		case header:
			c = ansiBold
		case strings.HasPrefix(line, "+"):
			c = ansiGreen
		case strings.HasPrefix(line, "-"):
			c = ansiRed
		}
		if c != "" {
			fmt.Fprintf(w, "%s%s%s\n", c, line, ansiReset)
		} else {
			fmt.Fprintf(w, "%s\n", line)
		}
	}
}

// statWidth is the widest +/- bar of a diffstat.
const statWidth = 50

// printStat prints a git-style diffstat.
func printStat(w io.Writer, diffs []overlay.FileDiff, color bool) {
	if len(diffs) == 0 {
		return
	}
	names := make([]string, len(diffs))
	nameW, most, numW := 0, 0, 1
	added, deleted := 0, 0
	for i, d := range diffs {
		names[i] = d.Path
		if d.From != "" {
			names[i] = d.From + " => " + d.Path
		}
		if d.Merged {
			names[i] += " (merged)"
		}
		nameW = max(nameW, len(names[i]))
		most = max(most, d.Added+d.Deleted)
		numW = max(numW, len(fmt.Sprint(d.Added+d.Deleted)))
		added += d.Added
		deleted += d.Deleted
	}
	plus, minus := "+", "-"
	if color {
		plus, minus = ansiGreen+"+", ansiRed+"-"
	}
	for i, d := range diffs {
		if d.Binary {
			fmt.Fprintf(w, " %-*s | %*s\n", nameW, names[i], numW, "Bin")
			continue
		}
		n := d.Added + d.Deleted
		a, r := d.Added, d.Deleted
		if most > statWidth { // scale, keeping a mark for any change
			a = scaled(d.Added, most)
			r = scaled(d.Deleted, most)
		}
		bar := ""
		if a > 0 {
			bar += plus + strings.Repeat("+", a-1)
		}
		if r > 0 {
			bar += minus + strings.Repeat("-", r-1)
		}
		if color && bar != "" {
			bar += ansiReset
		}
		fmt.Fprintf(w, " %-*s | %*d %s\n", nameW, names[i], numW, n, bar)
	}
	summary := fmt.Sprintf(" %d %s changed", len(diffs), plural(len(diffs), "file", "files"))
	if added > 0 || deleted == 0 {
		summary += fmt.Sprintf(", %d %s(+)", added, plural(added, "insertion", "insertions"))
	}
	if deleted > 0 || added == 0 {
		summary += fmt.Sprintf(", %d %s(-)", deleted, plural(deleted, "deletion", "deletions"))
	}
	fmt.Fprintln(w, summary)
}

// scaled shrinks n of most to statWidth, at least 1 when n > 0.
func scaled(n, most int) int {
	if n == 0 {
		return 0
	}
	return max(1, n*statWidth/most)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
