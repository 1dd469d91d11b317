package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

var undoCmd = &cobra.Command{
	Use:   "undo",
	Short: "Revert the last commit",
	Long: `Reverts the draft's last commit: the disk gets back what the commit
overwrote or deleted, and the committed changes are in the draft again,
for you to review once more. Refused (status 1) when there is nothing to
undo, or when files the commit wrote were changed since (undo would lose
those changes), or when the draft has new changes at the same paths.`,
	Example: `  draftfs commit && make test || draftfs undo`,
	Args:    args(cobra.NoArgs),
	RunE: func(cmd *cobra.Command, _ []string) error {
		s, err := connect(readWrite)
		if err != nil {
			return err
		}
		defer s.close()
		res, err := s.Undo(s.cfg.draft)
		if err != nil {
			return err
		}
		n := len(res.Paths)
		fmt.Printf("reverted commit %d: %d %s restored on disk, the changes are back in the draft\n",
			res.ID, n, plural(n, "path", "paths"))
		return nil
	},
}

func init() { root.AddCommand(undoCmd) }
