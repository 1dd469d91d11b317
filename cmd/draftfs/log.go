package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/protocol/control"
)

var flagLogJSON bool

var logCmd = &cobra.Command{
	Use:   "log [--json]",
	Short: "Show the draft's history",
	Long: `Shows the draft's history, oldest first: each write, creation, deletion
and rename an agent made, and each commit, discard and undo, with its
time (UTC) and source: mount (through a mount or draftfs run), acp, mcp,
cli or editor.

--json prints an array of {"time", "op", "path"?, "from"?, "paths"?,
"source"}.`,
	Example: `  draftfs log
  draftfs log --json | jq -r '.[] | select(.source == "mcp") | .path'`,
	Args: args(cobra.NoArgs),
	RunE: func(cmd *cobra.Command, _ []string) error {
		s, err := connect(readOnly)
		if err != nil {
			return err
		}
		defer s.close()
		entries, err := s.Log(control.DraftParams{Draft: s.cfg.draft})
		if err != nil {
			return err
		}
		if flagLogJSON {
			return printJSON(entries)
		}
		printLog(os.Stdout, entries)
		return nil
	},
}

func init() {
	logCmd.Flags().BoolVar(&flagLogJSON, "json", false, "print JSON")
	root.AddCommand(logCmd)
}

// logPaths is how many paths of a commit or discard a log line names.
const logPaths = 3

func printLog(w io.Writer, entries []overlay.LogEntry) {
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
		fmt.Fprintf(w, "%s  %-6s  %-8s  %s\n", e.Time.UTC().Format("2006-01-02 15:04:05"), e.Source, e.Op, what)
	}
}
