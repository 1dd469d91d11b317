package main

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/protocol/acp"
	"github.com/draftfs/draftfs/protocol/files"
)

var flagDraftPerSession bool

var acpCmd = &cobra.Command{
	Use:   "acp [--] AGENT_CMD [ARGS...]",
	Short: "Run an ACP agent so that it reads the merged view and writes to the draft",
	Long: `Sits between an editor and an agent that speak the Agent Client Protocol:
configure the editor to launch "draftfs acp -- AGENT_CMD ARGS..." instead
of the agent. Messages pass unchanged both ways, except that the agent is
told the editor can read and write files, and its fs/read_text_file and
fs/write_text_file requests are answered from the merged view of the
session's workspace (its cwd): it sees unsaved buffers, and what it
writes lands in the draft, never on disk. Its terminal commands run on the
merged view (draftfs run). Review with draftfs status and diff.

It uses the running daemon of each workspace, or serves the workspace
itself while it runs. The exit status is the agent's.`,
	Example: `  draftfs acp -- gemini --experimental-acp
  draftfs acp --draft-per-session -- npx @zed-industries/claude-code-acp`,
	Args: args(cobra.MinimumNArgs(1)),
	RunE: func(cmd *cobra.Command, a []string) error {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find the draftfs executable for terminals: %w", err)
		}
		views := &acpViews{}
		defer views.close()
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		status, err := acp.Run(ctx, acp.Options{
			Agent:           a,
			Stdin:           os.Stdin,
			Stdout:          os.Stdout,
			Stderr:          os.Stderr,
			Open:            views.open,
			Draft:           flagDraft,
			DraftPerSession: flagDraftPerSession,
			Terminal: func(dir, draft string) (string, []string) {
				args := []string{"--workspace", dir, "--draft", draft}
				if flagState != "" {
					args = append(args, "--state", flagState)
				}
				return exe, append(args, "run", "--")
			},
		})
		if err != nil {
			return err
		}
		return exitStatus(status)
	},
}

func init() {
	acpCmd.Flags().SetInterspersed(false) // flags after AGENT_CMD are the agent's
	acpCmd.Flags().BoolVar(&flagDraftPerSession, "draft-per-session", false, "give each ACP session a draft of its own, named after the session")
	root.AddCommand(acpCmd)
}

// acpViews opens the merged views the proxy asks for, one per workspace
// and draft, with workspaceFilesAt, and closes them all at the end.
type acpViews struct {
	mu     sync.Mutex // protects the following
	closes []func() error
}

// open is acp.Options.Open.
func (v *acpViews) open(dir, draft string) (files.Files, error) {
	f, closeFiles, err := workspaceFilesAt(dir, draft, overlay.SourceACP)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	v.closes = append(v.closes, closeFiles)
	v.mu.Unlock()
	return f, nil
}

func (v *acpViews) close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	// Last opened first: a view over the socket of a daemon this process
	// started closes before that daemon.
	for i := len(v.closes) - 1; i >= 0; i-- {
		if err := v.closes[i](); err != nil {
			logf("acp: %v", err)
		}
	}
}
