package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/daemon/contain"
	"github.com/draftfs/draftfs/daemon/serving"
	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/protocol/control"
)

var runCmd = &cobra.Command{
	Use:   "run [--] CMD [ARGS...]",
	Short: "Run a command inside the draft: its writes land in the draft, never on disk",
	Long: `Runs CMD in private namespaces (built with bubblewrap) where the workspace's
own path shows the merged view (draft over buffers over disk), so absolute
paths work and every write, new file, deletion or rename, by CMD and by
every process it starts, lands in the draft, never on disk. Review
afterwards with draftfs status and diff.

Started inside the workspace, CMD runs in the same directory, seen
through the view; started outside it, CMD runs at the workspace's root
in the view (and draftfs says so), never in a directory outside it.

What is contained:
  - the workspace's path shows the view and cannot be uncovered: CMD has
    no capabilities and its own user namespace, so it cannot unmount the
    view or mount over it;
  - CMD sees only its own processes (a PID namespace and its own /proc),
    so no /proc/PID/root path leads to the disk;
  - draftfs's state directory is hidden: inside, draftfs status, diff and
    log show the draft CMD is in, while commit, discard, undo and buffer
    changes are refused: reviewing the draft is the user's.
What is not: the rest of the file system (your home, /tmp, other
projects) is reachable and writable as by you, and so are the network
and the sockets of your other programs (tmux, editors, the session bus).
This keeps agents' work on the workspace in the draft; it is not a
sandbox.

It uses the mount of the running daemon (asking it to mount the draft
when it has none), or starts a daemon in this process for the command's
duration. The terminal, Ctrl-C and job control reach CMD as usual. The
exit status is CMD's (128+N when signal N ended it). Needs bubblewrap
(bwrap) and, for ordinary users, unprivileged user namespaces (Debian's
default) and access to /dev/fuse.`,
	Example: `  draftfs run -- make test
  draftfs run -- claude
  draftfs --workspace ~/src/app run -- codex
  draftfs --draft experiment run -- sh -c 'sed -i s/foo/bar/ src/*.go'`,
	Args: args(cobra.MinimumNArgs(1)),
	RunE: func(cmd *cobra.Command, a []string) error {
		cfg, err := loadConfig()
		if err != nil {
			return err
		}
		if cfg.insideRun() {
			return runHere(cfg, a)
		}
		code, err := runContained(cfg, a, true)
		if err != nil {
			return err
		}
		return exitStatus(code)
	},
}

func init() {
	runCmd.Flags().SetInterspersed(false) // flags after CMD are CMD's
	root.AddCommand(runCmd, execCmd)
}

// execCmd is the helper that execs the command inside the namespace
// (see contain.Exec), not for people.
var execCmd = &cobra.Command{
	Use:                contain.HelperCommand,
	Hidden:             true,
	DisableFlagParsing: true,
	RunE: func(cmd *cobra.Command, a []string) error {
		return exitStatus(contain.Exec(a))
	},
}

// insideRun reports whether the command runs inside draftfs run or
// acp already: the workspace's own path is the view.
func (c *config) insideRun() bool {
	return c.view != nil && c.view.Mountpoint == c.workspace
}

// runHere runs a command of draftfs run started inside draftfs run:
// it is in the view already, so CMD runs as it is (in the workspace's
// root when started outside it).
func runHere(cfg *config, args []string) error {
	if cfg.draft != cfg.view.Draft {
		return fmt.Errorf("this is draftfs run in draft %s: a command cannot switch to draft %s from inside", cfg.view.Draft, cfg.draft)
	}
	if dir := runDir(cfg); dir != "" {
		if err := os.Chdir(dir); err != nil {
			return err
		}
	}
	return exitStatus(contain.Exec(append([]string{"--"}, args...)))
}

// runDir is where a command runs in the view: the current directory
// when it lies in the workspace (or in a view of it), "" for the
// workspace's root otherwise, which runContained announces.
func runDir(cfg *config) string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	if wd, err = filepath.EvalSymlinks(wd); err != nil {
		return ""
	}
	wd = cfg.inWorkspace(wd)
	if rel, err := filepath.Rel(cfg.workspace, wd); err == nil && (rel == "." || filepath.IsLocal(rel)) {
		return wd
	}
	return ""
}

// runContained runs args in the draft's view (see draftfs run --help)
// with this process's stdio, and returns their exit status. interactive
// keeps the terminal's session for args when there is one.
func runContained(cfg *config, args []string, interactive bool) (int, error) {
	dir := runDir(cfg)
	if dir == "" {
		dir = cfg.workspace
		if wd, err := os.Getwd(); err == nil {
			logf("run: %s is outside the workspace: running at its root, %s, in the view", wd, dir)
		}
	}
	spec, err := containSpec(cfg, dir)
	if err != nil {
		return 0, err
	}
	spec.Terminal = interactive && (isTerminal(os.Stdin) || isTerminal(os.Stdout) || isTerminal(os.Stderr))
	mnt, stop, step, err := runMount(cfg)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err := stop(); err != nil {
			logf("run: %v", err)
		}
	}()
	spec.View = mnt
	c, err := contain.Command(spec, args)
	if err != nil {
		return 0, err
	}
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	// The terminal sends SIGINT and SIGQUIT to the command too: they are
	// its to handle (see contain). SIGTERM and SIGHUP end it.
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT)
	defer signal.Reset(syscall.SIGINT, syscall.SIGQUIT)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	// Ended before the mount goes (defers run last first).
	author, label := runAuthor(args)
	defer step(author, label, args)()
	if err := c.Start(); err != nil {
		return 0, err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case sig := <-sigs:
			c.Process.Signal(sig)
		case <-done:
		}
	}()
	return c.Wait()
}

// containSpec is the namespace of a command in cfg's draft, working in
// dir; the caller sets the view.
func containSpec(cfg *config, dir string) (contain.Spec, error) {
	exe, err := os.Executable()
	if err != nil {
		return contain.Spec{}, fmt.Errorf("find the draftfs executable: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return contain.Spec{}, fmt.Errorf("find the draftfs executable: %w", err)
	}
	state, err := stateRoot()
	if err != nil {
		return contain.Spec{}, err
	}
	// Inside, the state root and the socket directory are empty; the
	// control socket's path leads to the agent socket.
	hide := []string{state}
	sock := cfg.socket()
	if !within(sock, state) {
		hide = append(hide, filepath.Dir(sock))
	}
	return contain.Spec{
		Workspace: cfg.workspace,
		Hide:      hide,
		Binds:     [][2]string{{control.AgentSocketPath(cfg.stateDir), sock}},
		Dir:       dir,
		Helper:    exe,
	}, nil
}

// within reports whether p is dir or lies below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// runMount finds or makes a mount of the draft for run: the daemon's,
// or one served by this process until stop. step begins the step of
// the draft's timeline that the run is.
func runMount(cfg *config) (dir string, stop func() error, step stepFunc, err error) {
	for attempt := 0; ; attempt++ {
		c, err := control.Dial(cfg.socket())
		if err == nil {
			dir, err := c.Mount(cfg.draft)
			if err != nil {
				c.Close()
				return "", nil, nil, err
			}
			return dir, c.Close, clientStep(c, cfg.draft), nil
		}
		if !errors.Is(err, control.ErrNoDaemon) {
			return "", nil, nil, err
		}
		// It may exec draftfs again with the same arguments: what
		// this process did so far may happen twice.
		serving.Setup()
		d, err := startDaemon(cfg, "run")
		if errors.Is(err, control.ErrRunning) && attempt == 0 {
			continue // one started meanwhile: use it
		}
		if err != nil {
			return "", nil, nil, err
		}
		dir, err = d.Mount(cfg.draft, "")
		if err != nil {
			d.Close()
			return "", nil, nil, err
		}
		return dir, d.Close, draftStep(d), nil
	}
}

// runAuthor is who a run's changes are by: its command.
func runAuthor(args []string) (overlay.Author, string) {
	label := "run: " + strings.Join(args, " ")
	if len(label) > 100 {
		label = label[:97] + "..."
	}
	return overlay.Author{Source: overlay.SourceMount, Name: filepath.Base(args[0])}, label
}
