package main

import (
	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/fusefs"
)

// runChildCmd is the helper process of draftfs run (see fusefs.Run),
// not for people.
var runChildCmd = &cobra.Command{
	Use:                fusefs.RunChildCommand,
	Hidden:             true,
	DisableFlagParsing: true,
	RunE: func(cmd *cobra.Command, a []string) error {
		return exitStatus(fusefs.RunChild(a))
	},
}

func init() { root.AddCommand(runChildCmd) }
