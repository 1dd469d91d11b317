package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/overlay"
)

var (
	flagGCDryRun bool
	flagGCJSON   bool
)

var gcCmd = &cobra.Command{
	Use:   "gc [--dry-run] [--json]",
	Short: "Show the draft's state size and drop what it no longer needs",
	Long: fmt.Sprintf(`Says how much the draft's state takes on disk (undo data, kept base
contents, the draft's files) and drops what it no longer needs: the undo
data of commits older than the last %d (they can no longer be undone),
kept base contents no draft change or kept commit refers to, and what a
crash left. This also happens by itself after every commit, discard and
undo, so the state stays bounded; gc is for seeing the size, and for a
state that predates it.

--dry-run only reports. --json prints {"dryRun"?, "size", "undo",
"blobs", "data", "freed", "expired": [commit ids], "blobsDropped"}.`, overlay.UndoKeep),
	Example: `  draftfs gc --dry-run
  draftfs gc`,
	Args: args(cobra.NoArgs),
	RunE: func(cmd *cobra.Command, _ []string) error {
		acc := readWrite
		if flagGCDryRun {
			acc = readOnly
		}
		s, err := connect(acc)
		if err != nil {
			return err
		}
		defer s.close()
		res, err := s.GC(s.cfg.draft, flagGCDryRun)
		if err != nil {
			return err
		}
		if flagGCJSON {
			return printJSON(res)
		}
		verb := "freed"
		if res.DryRun {
			verb = "would free"
		}
		fmt.Printf("draft %s: state %s (undo data %s, kept bases %s, draft files %s); %s %s: undo data of %d commit(s), %d kept base(s)\n",
			s.cfg.draft, overlay.FormatSize(res.Size), overlay.FormatSize(res.Undo), overlay.FormatSize(res.Blobs),
			overlay.FormatSize(res.Data), verb, overlay.FormatSize(res.Freed), len(res.Expired), res.BlobsDropped)
		return nil
	},
}

func init() {
	gcCmd.Flags().BoolVar(&flagGCDryRun, "dry-run", false, "only report the size and what would be dropped")
	gcCmd.Flags().BoolVar(&flagGCJSON, "json", false, "print JSON")
	root.AddCommand(gcCmd)
}
