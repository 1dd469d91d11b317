package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/protocol/mcp"
)

var mcpCmd = &cobra.Command{
	Use:   "mcp [ALLOWED_DIR...]",
	Short: "Serve the merged view to an MCP client on stdin/stdout",
	Long: `An MCP server on stdin/stdout with the tools of the reference filesystem
server (@modelcontextprotocol/server-filesystem): the same names, inputs,
annotations and answers, over the merged view. The agent reads what you
see, unsaved editor text included; everything it writes, edits, moves or
deletes lands in the draft, never on disk, until you commit.

Beyond the reference: delete_file, restore_file, copy_file, append_file,
search_content (find text in files, best matches first), and the
read-only draft_status and draft_diff. No tool commits.

The tools reach the ALLOWED_DIRs (default: the workspace), which must lie
inside the workspace; a client that has MCP roots replaces them with its
roots. Files are also resources (file:// URIs) a client can subscribe to.
Files over 10 MiB are not read whole; a message over 64 MiB is answered
with an error and skipped. A tool that panics (a bug) is answered with a
tool error naming it, and then draftfs mcp exits with status 70.

It uses the workspace's running daemon, or serves the workspace itself
while it runs, so draftfs status and editors still reach it.`,
	Example: `  draftfs --workspace ~/src/project mcp
  # in an MCP client's configuration:
  {"command": "draftfs", "args": ["--workspace", "/home/me/src/project", "mcp"]}`,
	RunE: func(cmd *cobra.Command, dirs []string) error {
		f, step, closeFiles, err := workspaceFiles(overlay.SourceMCP)
		if err != nil {
			return err
		}
		defer closeFiles()
		s, err := mcp.New(f, mcp.Options{Dirs: dirs, Version: version(), Log: os.Stderr,
			Step: func(client, label string) func() {
				return step(overlay.Author{Source: overlay.SourceMCP, Name: client}, label, nil)
			},
			Fatal: func(err error) {
				logf("%v. This is a bug; draftfs mcp stops, as it may have left the draft locked. Nothing written is lost: the draft's journal is recovered when draftfs next opens it.", err)
				exitAfterBug()
			}})
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := s.RunStdio(ctx); err != nil && ctx.Err() == nil {
			return err
		}
		return nil
	},
}

func init() { root.AddCommand(mcpCmd) }
