package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/daemon/contain"
	"github.com/draftfs/draftfs/daemon/serving"
	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/agent"
	"github.com/draftfs/draftfs/protocol/acp"
)

var flagDraftPerSession bool

var acpCmd = &cobra.Command{
	Use:   "acp [--] AGENT_CMD [ARGS...]",
	Short: "Run an ACP agent inside the draft, between it and the editor",
	Long: `Sits between an editor and an agent that speak the Agent Client Protocol:
configure the editor to launch "draftfs acp -- AGENT_CMD ARGS..." instead
of the agent.

The agent process runs inside the draft, as under draftfs run: at the
workspace's own path its own reads see the merged view (unsaved editor
buffers included), and its own writes, its built-in tools and every
process it spawns land in the draft, never on disk. That workspace is
the proxy's: --workspace, else the one found from the current directory
(see draftfs --help); the agent starts there, before any session/new.
A session whose cwd (or additionalDirectories) lies outside it is
refused: the agent's own file I/O there would reach the disk. Start one
draftfs acp per workspace.

Messages pass unchanged both ways, except that the agent is told the
editor can read and write files, and its fs/read_text_file and
fs/write_text_file requests are answered from the merged view of the
session's workspace and draft; its terminal commands run inside the
draft too (draftfs run). Review with draftfs status and diff, outside.

--draft-per-session gives each session a draft of its own, named after
the session, for what arrives through fs/* and terminals. The agent is
one process in one view, so its own direct file I/O, whatever the
session, lands in the proxy's draft (--draft). For agents that write
with their own tools (most do now), run one draftfs acp per session
instead.

It uses the running daemon of the workspace, or serves the workspace
itself while it runs. The exit status is the agent's. Needs what
draftfs run needs (see draftfs run --help, which also says what is and
is not isolated).`,
	Example: `  draftfs acp -- gemini --experimental-acp
  draftfs acp -- npx @zed-industries/claude-code-acp
  draftfs --workspace ~/src/app acp -- codex-acp`,
	Args: args(cobra.MinimumNArgs(1)),
	RunE: func(cmd *cobra.Command, a []string) error {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find the draftfs executable for terminals: %w", err)
		}
		cfg, err := loadConfig()
		if err != nil {
			return err
		}
		agent, step, stop, err := acpAgent(cfg, a)
		if err != nil {
			return err
		}
		defer func() {
			if err := stop(); err != nil {
				logf("acp: %v", err)
			}
		}()
		views := &acpViews{}
		defer views.close() // before stop: views may use its daemon
		ctx, stopSignals := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stopSignals()
		status, err := acp.Run(ctx, acp.Options{
			Agent:           agent,
			Start:           serving.Start,
			Allow:           func(dirs []string) error { return acpAllow(cfg, dirs) },
			Stdin:           os.Stdin,
			Stdout:          os.Stdout,
			Stderr:          os.Stderr,
			Open:            views.open,
			Draft:           cfg.draft,
			DraftPerSession: flagDraftPerSession,
			Step: func(agentName, session string) func() {
				if agentName == "" {
					agentName = commandName(a)
				}
				// The agent's own file I/O goes through the mount: by
				// the agent, named as the step is.
				return step(overlay.Author{Source: overlay.SourceACP, Name: agentName, Session: session}, "session/prompt", []string{agentName})
			},
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

// acpAgent returns the command line that runs the agent inside cfg's
// draft, with the mount it uses (stop releases it after the agent).
// Inside draftfs run the agent is contained already: it runs as it is.
func acpAgent(cfg *config, agent []string) (argv []string, step stepFunc, stop func() error, err error) {
	if cfg.insideRun() {
		// The run around it is the step.
		return agent, func(overlay.Author, string, []string) func() { return func() {} }, func() error { return nil }, nil
	}
	dir := runDir(cfg)
	if dir == "" {
		dir = cfg.workspace
	}
	spec, err := containSpec(cfg, dir)
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := contain.Check(); err != nil {
		return nil, nil, nil, err
	}
	if spec.View, stop, step, err = runMount(cfg); err != nil {
		return nil, nil, nil, err
	}
	if argv, err = contain.Args(spec, agent); err != nil {
		stop()
		return nil, nil, nil, err
	}
	return argv, step, stop, nil
}

// acpAllow refuses sessions in directories outside the workspace the
// agent is contained in.
func acpAllow(cfg *config, dirs []string) error {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		p := d
		if r, err := filepath.EvalSymlinks(d); err == nil {
			p = r
		}
		if !within(cfg.inWorkspace(p), cfg.workspace) {
			return fmt.Errorf("draftfs acp runs this agent inside the draft of %s, and %s lies outside it, where the agent's own file I/O would reach the disk: start another draftfs acp with --workspace %s", cfg.workspace, d, d)
		}
	}
	return nil
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
func (v *acpViews) open(dir, draft string) (agent.Files, error) {
	f, _, closeFiles, err := workspaceFilesAt(dir, draft, overlay.SourceACP)
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

// commandName names an agent by its command line when it does not name
// itself: the program, or the script an interpreter runs.
func commandName(argv []string) string {
	name := filepath.Base(argv[0])
	switch name {
	case "node", "npx", "bun", "bunx", "deno", "python", "python3", "uv", "uvx", "pnpm", "yarn":
		for _, a := range argv[1:] {
			if !strings.HasPrefix(a, "-") {
				return filepath.Base(a)
			}
		}
	}
	return name
}
