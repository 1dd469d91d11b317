package main

import (
	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/daemon/mounts"
)

var unmountCmd = &cobra.Command{
	Use:   "unmount DIR",
	Short: "Unmount a merged view, also one whose daemon died",
	Long: `Unmounts the draftfs mount at DIR. This also clears a mount left behind by
a daemon that was killed (where every access fails with "transport
endpoint is not connected"). Mounts of other file systems are refused. A
mount in use is detached: it goes away when the last process using it
leaves. The daemon that served DIR with draftfs mount then exits.`,
	Example:           `  draftfs unmount /tmp/view`,
	Args:              args(cobra.ExactArgs(1)),
	ValidArgsFunction: completeDirs,
	RunE: func(cmd *cobra.Command, a []string) error {
		return mounts.Unmount(a[0])
	},
}

func init() { root.AddCommand(unmountCmd) }
