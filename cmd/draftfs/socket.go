package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

var socketCmd = &cobra.Command{
	Use:   "socket",
	Short: "Print the path of the workspace's control socket",
	Long: `Prints the path of the control socket of the workspace, where its daemon
listens (JSON-RPC 2.0, one message per line) whether or not one runs now.
Editor plugins use it to find the daemon. It lies in the workspace's
state directory, or, when that path is too long for a Unix socket, under
$XDG_RUNTIME_DIR/draftfs or /tmp/draftfs-UID.`,
	Example: `  draftfs socket
  nvim --cmd "let g:draftfs_socket = '$(draftfs socket)'"`,
	Args: args(cobra.NoArgs),
	RunE: func(cmd *cobra.Command, _ []string) error {
		cfg, err := loadConfig()
		if err != nil {
			return err
		}
		fmt.Println(cfg.socket())
		return nil
	},
}

func init() { root.AddCommand(socketCmd) }
