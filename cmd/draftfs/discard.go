package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/protocol/control"
)

var flagDiscardAll bool

var discardCmd = &cobra.Command{
	Use:   "discard (--all | PATH...)",
	Short: "Drop the draft's changes",
	Long: `Drops the draft's changes below each PATH, or all of them with --all: the
merged view falls back to your editor buffers and the disk. A rename is
dropped with its source. A PATH without changes is refused (status 1)
and nothing is dropped. Prints the paths dropped.`,
	Example: `  draftfs discard src/generated.go
  draftfs discard build/
  draftfs discard --all`,
	ValidArgsFunction: completeChanged,
	RunE: func(cmd *cobra.Command, a []string) error {
		switch {
		case flagDiscardAll && len(a) > 0:
			return usagef("give PATHs or --all, not both")
		case !flagDiscardAll && len(a) == 0:
			return usagef("give the PATHs to discard, or --all")
		}
		s, paths, err := connectFor(a, readWrite)
		if err != nil {
			return err
		}
		defer s.close()
		dropped, err := s.Discard(control.DiscardParams{Draft: s.cfg.draft, Paths: paths, All: flagDiscardAll})
		if err != nil {
			return err
		}
		for _, p := range dropped {
			fmt.Printf("discarded %s\n", p)
		}
		return nil
	},
}

func init() {
	discardCmd.Flags().BoolVar(&flagDiscardAll, "all", false, "discard every change of the draft")
	root.AddCommand(discardCmd)
}
