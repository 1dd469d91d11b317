package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/overlay"
)

var (
	flagLogJSON  bool
	flagLogPatch bool
)

var logCmd = &cobra.Command{
	Use:   "log [--json] [-p]",
	Short: "Show the draft's timeline of checkpoints and its history",
	Long: `Shows the draft's timeline, newest first: each checkpoint (one draftfs
run, one ACP prompt turn, one MCP tool call, or a burst of writes through
the mount ended by 2 seconds without one, and each rewind) with its id,
time (UTC), author (the source: mount, acp, mcp, cli or editor, and the
command, agent or client when known), the files it changed and a +N -M
count of the lines added and deleted. Under each, oldest first, the
changes it holds: each write, creation, deletion and rename, and each
commit, discard and undo, with time, source and who made it ("by"):
through the mount, the command line of the process that made it, or
for any process of a draftfs run (or of an ACP agent) the command the
run started. Changes made since the last checkpoint come first.

-p shows each checkpoint's diff from the one before (draftfs diff A..B
compares any two; draftfs rewind ID puts the draft back as it was right
after one).

--json prints an array of {"id", "time", "author": {"source", "name"?,
"session"?}, "label"?, "files", "added", "deleted", "rewound"?, "ops":
[{"time", "op", "path"?, "from"?, "paths"?, "source", "by"?}]}, newest first; an
element with id 0 holds the changes since the last checkpoint.`,
	Example: `  draftfs log
  draftfs log -p
  draftfs log --json | jq -r '.[] | "\(.id) \(.author.source) \(.files | join(" "))"'`,
	Args: args(cobra.NoArgs),
	RunE: func(cmd *cobra.Command, _ []string) error {
		s, err := connect(readOnly)
		if err != nil {
			return err
		}
		defer s.close()
		entries, err := s.Log(s.cfg.draft)
		if err != nil {
			return err
		}
		cps, err := s.Timeline(s.cfg.draft)
		if err != nil {
			return err
		}
		steps := logSteps(cps, entries)
		if flagLogJSON {
			return printJSON(steps)
		}
		w := bufio.NewWriterSize(os.Stdout, 64<<10)
		for i, st := range steps {
			printStep(w, st)
			if flagLogPatch && st.ID != 0 {
				var from uint64
				if i+1 < len(steps) {
					from = steps[i+1].ID
				}
				diffs, err := s.DiffRange(s.cfg.draft, from, st.ID)
				if err != nil {
					return err
				}
				for _, d := range diffs {
					printPatch(w, d.Patch, false)
				}
				fmt.Fprintln(w)
			}
		}
		return w.Flush()
	},
}

func init() {
	logCmd.Flags().BoolVar(&flagLogJSON, "json", false, "print JSON")
	logCmd.Flags().BoolVarP(&flagLogPatch, "patch", "p", false, "show each checkpoint's diff")
	root.AddCommand(logCmd)
}

// step is a checkpoint with the changes it holds.
type step struct {
	overlay.Checkpoint
	Ops []overlay.LogEntry `json:"ops"`
}

// logSteps files the log's entries (oldest first) under the checkpoints
// (newest first) whose state holds them: entry i under the oldest
// checkpoint whose LogEnd is past i, so a change finished late (a write
// whose front end answered after the step's checkpoint was read) goes
// with the state that holds it. A checkpoint made before checkpoints
// recorded LogEnd takes the entries made before it. Entries after the
// last checkpoint go in a step with id 0, first.
func logSteps(cps []overlay.Checkpoint, entries []overlay.LogEntry) []step {
	out := make([]step, 0, len(cps)+1)
	for _, cp := range cps {
		// The chunks of its state and those expiry looks at: of no use
		// to a reader.
		cp.State, cp.Dropped, cp.Drops = nil, nil, false
		out = append(out, step{Checkpoint: cp, Ops: []overlay.LogEntry{}})
	}
	var pending []overlay.LogEntry
	for i, e := range entries {
		at := -1
		for j := len(out) - 1; j >= 0; j-- {
			cp := out[j]
			if cp.LogEnd > uint64(i) || cp.LogEnd == 0 && !cp.Time.Before(e.Time) {
				at = j
				break
			}
		}
		if at < 0 {
			pending = append(pending, e)
			continue
		}
		out[at].Ops = append(out[at].Ops, e)
	}
	if len(pending) > 0 {
		out = append([]step{{Checkpoint: overlay.Checkpoint{Label: "since the last checkpoint", Files: []string{}}, Ops: pending}}, out...)
	}
	return out
}

// logPaths is how many paths of a commit or discard a log line names.
const logPaths = 3

func printStep(w io.Writer, st step) {
	if st.ID == 0 {
		fmt.Fprintln(w, "not in a checkpoint yet:")
	} else {
		label := ""
		if st.Label != "" {
			label = "  " + st.Label
		}
		fmt.Fprintf(w, "checkpoint %d  %s  %s%s\n", st.ID, st.Time.UTC().Format("2006-01-02 15:04:05"), st.Author, label)
		files := st.Files[:min(len(st.Files), 8)]
		more := ""
		if len(st.Files) > len(files) {
			more = fmt.Sprintf(" and %d more", len(st.Files)-len(files))
		}
		fmt.Fprintf(w, "  %s%s (+%d -%d)\n", strings.Join(files, ", "), more, st.Added, st.Deleted)
	}
	printLog(w, st.Ops, "    ")
}

func printLog(w io.Writer, entries []overlay.LogEntry, indent string) {
	for _, e := range entries {
		what := e.Path
		switch {
		case e.From != "":
			what = e.From + " -> " + e.Path
		case len(e.Paths) > 0:
			shown := e.Paths[:min(len(e.Paths), logPaths)]
			what = fmt.Sprintf("%d %s: %s", len(e.Paths), plural(len(e.Paths), "path", "paths"), strings.Join(shown, ", "))
			if len(e.Paths) > logPaths {
				what += ", ..."
			}
		}
		if e.By != "" {
			what += "  by " + e.By
		}
		fmt.Fprintf(w, "%s%s  %-6s  %-8s  %s\n", indent, e.Time.UTC().Format(time.DateTime), e.Source, e.Op, what)
	}
}
