package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/overlay"
)

var (
	flagStatusJSON    bool
	flagStatusIgnored bool
)

var statusCmd = &cobra.Command{
	Use:   "status [--json] [PATH...]",
	Short: "List what the draft changed",
	Long: `Lists the draft's changes (all, or below each PATH), one per line:

  M path          modified
  A path          added
  D path          deleted
  R old -> new    renamed
  C path          conflict: the file changed on disk or in an editor
                  since the agent first wrote it

Directories end in "/". Prints nothing when the draft changes nothing:
a file the draft holds with the type, mode, owner and content you have
(or had when the agent started: a touch, a sed that matched nothing, a
checkout back to the same text) is no change, for diff and commit too.
Paths are relative to the workspace's root.

What git ignores (.gitignore files, .git/info/exclude, your global
excludes) and git's own .git/ are folded, one line per ignored top
directory: "A .venv/ (1,479 files, ignored)". When another draft (see
draftfs drafts) changes the same paths, a note on stderr says so. A conflict in them is still
listed on a line of its own. --ignored lists them path by path. Commit
applies them too (draftfs commit --skip-ignored leaves them in the
draft).

A change of mode or owner follows the path: "(mode 100644 -> 104755)",
"(mode 106755)" for a new path with set-id or sticky bits, "(owner 0:0
-> 1000:1000)".

--json prints an array of {"path", "change", "from"?, "conflict",
"ignored"?, "fold"?, "alsoIn"?, "oldMode"?, "newMode"?, "oldOwner"?,
"newOwner"?} with change one of modified, added, deleted, renamed, every
path listed; "fold" is the line an ignored path is folded into,
"alsoIn" the other drafts that change it too.`,
	Example: `  draftfs status
  draftfs status src/
  draftfs status --json | jq -r '.[] | select(.conflict) | .path'`,
	ValidArgsFunction: completeChanged,
	RunE: func(cmd *cobra.Command, a []string) error {
		s, paths, err := connectFor(a, readOnly)
		if err != nil {
			return err
		}
		defer s.close()
		if flagStatusJSON {
			// Printed as the daemon encoded it: not decoded to be encoded
			// again.
			raw, err := s.StatusJSON(s.cfg.draft, paths...)
			if err != nil {
				return err
			}
			return printJSON(raw)
		}
		st, err := s.Status(s.cfg.draft, paths...)
		if err != nil {
			return err
		}
		// Few writes, not one per line: 10,000 lines cost 10,000 syscalls.
		out := bufio.NewWriterSize(os.Stdout, 64<<10)
		printStatus(out, st, flagStatusIgnored)
		if err := out.Flush(); err != nil {
			return err
		}
		printOverlaps(os.Stderr, st)
		return nil
	},
}

func init() {
	statusCmd.Flags().BoolVar(&flagStatusJSON, "json", false, "print JSON")
	statusCmd.Flags().BoolVar(&flagStatusIgnored, "ignored", false, "list what git ignores path by path instead of folded")
	root.AddCommand(statusCmd)
}

// printStatus prints status lines, what git ignores folded (one line per
// fold, see foldIgnored) unless all.
func printStatus(w io.Writer, st []overlay.StatusEntry, all bool) {
	if !all {
		st = foldIgnored(st)
	}
	for _, e := range st {
		line := e.Letter() + " " + e.Path
		if e.From != "" {
			line = e.Letter() + " " + e.From + " -> " + e.Path
		}
		switch {
		case e.OldMode != "":
			line += " (mode " + e.OldMode + " -> " + e.NewMode + ")"
		case e.NewMode != "":
			line += " (mode " + e.NewMode + ")"
		}
		if e.NewOwner != "" {
			line += " (owner " + e.OldOwner + " -> " + e.NewOwner + ")"
		}
		fmt.Fprintln(w, line)
	}
}

// printOverlaps says which other drafts change the same paths: once
// one is committed, the other's change to them is a conflict.
func printOverlaps(w io.Writer, st []overlay.StatusEntry) {
	paths := map[string][]string{}
	var drafts []string
	for _, e := range st {
		for _, o := range e.AlsoIn {
			if paths[o] == nil {
				drafts = append(drafts, o)
			}
			paths[o] = append(paths[o], e.Path)
		}
	}
	sort.Strings(drafts)
	for _, o := range drafts {
		p := paths[o]
		list := strings.Join(p[:min(len(p), 5)], ", ")
		if len(p) > 5 {
			list += fmt.Sprintf(" and %s more", thousands(len(p)-5))
		}
		fmt.Fprintf(w, "draftfs status: draft %s changes %s too; once one draft is committed the other's change is a conflict (draftfs --draft %s diff shows it)\n", o, list, o)
	}
}

// foldIgnored replaces the ignored entries of st by one entry per fold
// (a directory like .venv/ or .git/), whose Path says how many files it
// holds: "A .venv/ (1,479 files, ignored)". Its letter is the one its
// entries share, else M. Conflicts stay on lines of their own: the user
// has to see them.
func foldIgnored(st []overlay.StatusEntry) []overlay.StatusEntry {
	type fold struct {
		at     int // index in out
		change string
		files  int
	}
	byKey := func(a, b overlay.StatusEntry) int { return strings.Compare(sortKey(a), sortKey(b)) }
	if !slices.ContainsFunc(st, func(e overlay.StatusEntry) bool { return e.Ignored && !e.Conflict }) {
		// Nothing to fold: no copies of 10,000 entries, and no sort
		// unless a directory's "/" puts it out of order.
		if slices.IsSortedFunc(st, byKey) {
			return st
		}
		st = slices.Clone(st)
		slices.SortStableFunc(st, byKey)
		return st
	}
	folds := map[string]*fold{}
	out := make([]overlay.StatusEntry, 0, len(st))
	for _, e := range st {
		if !e.Ignored || e.Conflict {
			out = append(out, e)
			continue
		}
		f, ok := folds[e.Fold]
		if !ok {
			f = &fold{at: len(out), change: e.Change}
			folds[e.Fold] = f
			out = append(out, overlay.StatusEntry{Path: e.Fold, Ignored: true, Fold: e.Fold})
		}
		if f.change != e.Change {
			f.change = overlay.StatusModified
		}
		if !strings.HasSuffix(e.Path, "/") {
			f.files++
		}
	}
	for name, f := range folds {
		e := &out[f.at]
		e.Change = f.change
		switch {
		case strings.HasSuffix(name, "/"):
			e.Path = fmt.Sprintf("%s (%s %s, ignored)", name, thousands(f.files), plural(f.files, "file", "files"))
		default:
			e.Path = name + " (ignored)"
		}
	}
	slices.SortStableFunc(out, byKey)
	return out
}

// sortKey orders folded and plain entries by path.
func sortKey(e overlay.StatusEntry) string {
	if e.Fold != "" && e.Ignored && strings.Contains(e.Path, " (") {
		return e.Fold
	}
	return e.Path
}

// thousands spells n with commas: 1,479.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// printJSON prints v indented, as every --json output is. It is what
// json.Encoder with SetIndent prints, but json.Indent sizes its buffer
// up front: the Encoder's grows from nothing (half the CPU of a status
// of 10,000 entries).
//
// A json.RawMessage is printed as it is: as Marshal spells it when it
// is what Marshal wrote, as the daemon's answers are.
func printJSON(v any) error {
	b, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return err
		}
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err := out.WriteTo(os.Stdout)
	return err
}
