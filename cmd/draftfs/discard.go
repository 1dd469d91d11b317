package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/protocol/control"
)

var (
	flagDiscardAll   bool
	flagDiscardHunks []string
	flagDiscardPatch bool
)

var discardCmd = &cobra.Command{
	Use:   "discard (--all | PATH... | -p [PATH...] | --hunk ID...)",
	Short: "Drop the draft's changes",
	Long: `Drops the draft's changes below each PATH, or all of them with --all: the
merged view falls back to your editor buffers and the disk. A rename is
dropped with its source. A PATH without changes is refused (status 1)
and nothing is dropped. Prints the paths dropped.

-p (--patch) shows each hunk of the changes (below each PATH) on the
terminal and asks whether to discard it, as git add -p asks (y, n, q,
a, d, s split, ? help); --hunk ID discards the hunks whose ids
draftfs diff --json lists. The draft's file is rewritten without them,
keeping its other hunks; discarding every hunk of a file discards the
file. Prints the paths changed.`,
	Example: `  draftfs discard src/generated.go
  draftfs discard build/
  draftfs discard --all
  draftfs discard -p src/main.go
  draftfs discard --hunk 3f2a9c41d0be`,
	ValidArgsFunction: completeChanged,
	RunE: func(cmd *cobra.Command, a []string) error {
		byHunk := flagDiscardPatch || len(flagDiscardHunks) > 0
		switch {
		case flagDiscardAll && (len(a) > 0 || byHunk):
			return usagef("give either --all or what to discard (PATHs, -p, --hunk), not both")
		case len(flagDiscardHunks) > 0 && (len(a) > 0 || flagDiscardPatch):
			return usagef("give PATHs (with or without -p) or --hunk IDs, not both")
		case !flagDiscardAll && !byHunk && len(a) == 0:
			return usagef("give the PATHs to discard, or --all")
		}
		s, paths, err := connectFor(a, readWrite)
		if err != nil {
			return err
		}
		defer s.close()
		hunks, paths, err := hunksToTake(s, paths, flagDiscardHunks, flagDiscardPatch, "discard")
		if err != nil || paths == nil && hunks == nil && !flagDiscardAll {
			return err
		}
		dropped, err := s.Discard(s.cfg.draft, control.DiscardOptions{Paths: paths, Hunks: hunks, All: flagDiscardAll})
		if err != nil {
			return err
		}
		what := "discarded "
		if len(hunks) > 0 {
			what = "discarded hunks of "
		}
		for _, p := range dropped {
			fmt.Printf("%s%s\n", what, p)
		}
		return nil
	},
}

func init() {
	discardCmd.Flags().BoolVar(&flagDiscardAll, "all", false, "discard every change of the draft")
	discardCmd.Flags().BoolVarP(&flagDiscardPatch, "patch", "p", false, "choose hunk by hunk on the terminal what to discard, as git add -p")
	discardCmd.Flags().StringSliceVar(&flagDiscardHunks, "hunk", nil, "discard the hunk with this id (from draftfs diff --json); repeat, or separate with commas")
	root.AddCommand(discardCmd)
}
