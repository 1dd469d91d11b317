package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

var flagRewindJSON bool

var rewindCmd = &cobra.Command{
	Use:   "rewind [--json] CHECKPOINT",
	Short: "Put the draft back as it was right after a checkpoint",
	Long: `Puts the draft back exactly as it was right after CHECKPOINT (an id from
draftfs log): every file, deletion, rename, mode and content the draft
held then, and nothing it got since. The disk is not touched. The draft
as it was before is kept as a checkpoint first, and the rewind is a
checkpoint of its own, so rewinding to the one before it undoes the
rewind. A crash during a rewind leaves the draft either as it was or as
CHECKPOINT left it. A file open for writing in the draft (an agent still
at work) refuses the rewind.

--json prints the rewind's checkpoint, as draftfs log --json does.`,
	Example: `  draftfs log
  draftfs rewind 12
  draftfs diff 12..14`,
	Args: args(cobra.ExactArgs(1)),
	RunE: func(cmd *cobra.Command, a []string) error {
		id, err := checkpointID(a[0])
		if err != nil {
			return err
		}
		s, err := connect(readWrite)
		if err != nil {
			return err
		}
		defer s.close()
		cp, err := s.Rewind(s.cfg.draft, id)
		if err != nil {
			return err
		}
		if flagRewindJSON {
			cp.State = nil
			return printJSON(cp)
		}
		fmt.Printf("rewound to checkpoint %d as checkpoint %d: %d %s changed (+%d -%d); draftfs rewind %d goes back\n",
			id, cp.ID, len(cp.Files), plural(len(cp.Files), "path", "paths"), cp.Added, cp.Deleted, cp.ID-1)
		return nil
	},
}

func init() {
	rewindCmd.Flags().BoolVar(&flagRewindJSON, "json", false, "print the rewind's checkpoint as JSON")
	root.AddCommand(rewindCmd)
}

// checkpointID parses a checkpoint id as draftfs log shows it.
func checkpointID(s string) (uint64, error) {
	id, err := strconv.ParseUint(strings.TrimPrefix(s, "#"), 10, 64)
	if err != nil || id == 0 {
		return 0, usagef("%q is not a checkpoint id: give the number draftfs log shows", s)
	}
	return id, nil
}

// checkpointRange parses A..B (A may be left out); ok is false when s
// is not one (a path such as ../x).
func checkpointRange(s string) (from, to uint64, ok bool, err error) {
	a, b, found := strings.Cut(s, "..")
	number := func(x string) bool {
		_, err := strconv.ParseUint(strings.TrimPrefix(x, "#"), 10, 64)
		return err == nil
	}
	if !found || !number(b) || a != "" && !number(a) {
		return 0, 0, false, nil
	}
	if a != "" {
		if from, err = checkpointID(a); err != nil {
			return 0, 0, true, err
		}
	}
	to, err = checkpointID(b)
	return from, to, true, err
}
