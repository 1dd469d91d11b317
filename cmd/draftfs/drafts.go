package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/protocol/control"
)

var flagDraftsJSON bool

var draftsCmd = &cobra.Command{
	Use:   "drafts [--json]",
	Short: "List the workspace's drafts, their changes and who uses them",
	Long: `Lists every draft of the workspace (draftfs --draft NAME, and those draftfs
acp --draft-per-session makes, named after their session): how many
changes each holds (as draftfs status counts them, and how many of those
git ignores), where the daemon mounts it, and which processes work in it
(the daemon for its default draft, marked "*"; draftfs acp, mcp and
other clients for the drafts they read or write).

--json prints an array of {"name", "changes", "ignored"?, "mount"?,
"default"?, "users"?: [{"pid", "client"?, "command"?}], "error"?}.`,
	Example: `  draftfs drafts
  draftfs --draft s03dc3c8b status
  draftfs drafts --json | jq -r '.[] | select(.changes > 0) | .name'`,
	Args: args(cobra.NoArgs),
	RunE: func(cmd *cobra.Command, _ []string) error {
		s, err := connect(readOnly)
		if err != nil {
			return err
		}
		defer s.close()
		list, err := s.Drafts()
		if err != nil {
			return err
		}
		if flagDraftsJSON {
			return printJSON(list)
		}
		printDrafts(os.Stdout, list)
		return nil
	},
}

func init() {
	draftsCmd.Flags().BoolVar(&flagDraftsJSON, "json", false, "print JSON")
	root.AddCommand(draftsCmd)
}

// printDrafts prints one line per draft, in columns.
func printDrafts(w io.Writer, list []control.DraftInfo) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "DRAFT\tCHANGES\tMOUNTED AT\tUSED BY")
	for _, d := range list {
		name := d.Name
		if d.Default {
			name += " *"
		}
		changes := thousands(d.Changes)
		if d.Ignored > 0 {
			changes += fmt.Sprintf(" (%s ignored)", thousands(d.Ignored))
		}
		if d.Error != "" {
			changes = "? (" + oneLine(fmt.Errorf("%s", d.Error)) + ")"
		}
		mount := d.Mount
		if mount == "" {
			mount = "-"
		}
		var users []string
		for _, u := range d.Users {
			who := fmt.Sprintf("pid %d", u.Pid)
			if u.Command != "" {
				who += " " + shorten(u.Command, 60)
			} else if u.Client != "" {
				who += " " + u.Client
			}
			users = append(users, who)
		}
		if len(users) == 0 {
			users = []string{"-"}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, changes, mount, strings.Join(users, "; "))
	}
	tw.Flush()
}

// shorten cuts s to n characters, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
