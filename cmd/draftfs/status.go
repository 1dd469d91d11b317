package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/protocol/control"
)

var flagStatusJSON bool

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

Directories end in "/". Prints nothing when the draft is empty. Paths
are relative to the workspace's root.

--json prints an array of {"path", "change", "from"?, "conflict"} with
change one of modified, added, deleted, renamed.`,
	Example: `  draftfs status
  draftfs status src/
  draftfs status --json | jq -r '.[] | select(.conflict) | .path'`,
	ValidArgsFunction: completeChanged,
	RunE: func(cmd *cobra.Command, a []string) error {
		s, paths, err := connectFor(a, false)
		if err != nil {
			return err
		}
		defer s.close()
		st, err := s.Status(control.PathsParams{Draft: s.cfg.draft, Paths: paths})
		if err != nil {
			return err
		}
		if flagStatusJSON {
			return printJSON(st)
		}
		printStatus(os.Stdout, st)
		return nil
	},
}

func init() {
	statusCmd.Flags().BoolVar(&flagStatusJSON, "json", false, "print JSON")
	root.AddCommand(statusCmd)
}

// printStatus prints status lines.
func printStatus(w io.Writer, st []overlay.StatusEntry) {
	for _, e := range st {
		if e.From != "" {
			fmt.Fprintf(w, "%s %s -> %s\n", e.Letter(), e.From, e.Path)
		} else {
			fmt.Fprintf(w, "%s %s\n", e.Letter(), e.Path)
		}
	}
}

// printJSON prints v indented, as every --json output is.
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
