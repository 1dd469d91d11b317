package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/daemon"
	"github.com/draftfs/draftfs/daemon/serving"
)

// Flags of serve and mount.
var (
	flagMount       string
	flagAllowOther  bool
	flagPassthrough bool
	flagDebug       bool
)

var serveCmd = &cobra.Command{
	Use:   "serve [--mount DIR]",
	Short: "Run the workspace's daemon in the foreground",
	Long: `Runs the daemon of the workspace: it opens the workspace's state, listens
on the control socket (editors push their buffers there, and every other
draftfs command talks to it) and, with --mount, serves the merged view
(draft over buffers over disk) at DIR, creating DIR if needed.

When ready it prints one line naming the socket and the mount. SIGINT or
SIGTERM unmount cleanly and end it with status 0; so does unmounting DIR.
Only one daemon runs per workspace: a second one is refused.`,
	Example: `  draftfs serve
  draftfs serve --mount /tmp/view
  draftfs --workspace ~/src/app serve --mount ~/mnt/app --allow-other`,
	Args: args(cobra.NoArgs),
	RunE: func(cmd *cobra.Command, _ []string) error { return serve(flagMount) },
}

var mountCmd = &cobra.Command{
	Use:   "mount DIR",
	Short: "Serve the merged view at DIR (draftfs serve --mount DIR)",
	Long: `Runs the workspace's daemon in the foreground with the merged view
(draft over buffers over disk) mounted at DIR, creating DIR if needed:
the same as draftfs serve --mount DIR. Every change made through DIR lands
in the draft. SIGINT or SIGTERM unmount cleanly.`,
	Example: `  draftfs mount /tmp/view
  draftfs --workspace ~/src/app mount ~/mnt/app`,
	Args:              args(cobra.ExactArgs(1)),
	ValidArgsFunction: completeDirs,
	RunE:              func(cmd *cobra.Command, a []string) error { return serve(a[0]) },
}

func init() {
	for _, c := range []*cobra.Command{serveCmd, mountCmd} {
		c.Flags().BoolVar(&flagAllowOther, "allow-other", false, "let other users use the mount (FUSE allow_other)")
		c.Flags().BoolVar(&flagPassthrough, "passthrough", false, "let the kernel read files opened read-only straight from disk (FUSE passthrough, Linux 6.9+, root): faster cold reads of large files, a request more per open")
		c.Flags().BoolVar(&flagDebug, "debug", false, "log every FUSE request to stderr")
		root.AddCommand(c)
	}
	serveCmd.Flags().StringVar(&flagMount, "mount", "", "mount the merged view at `DIR`")
	serveCmd.MarkFlagDirname("mount")
}

// serve runs the daemon until a signal, printing the ready line.
func serve(mountDir string) error {
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	// Before anything that must not happen twice: it may exec draftfs
	// again with the same arguments.
	serving.Setup()
	// Subscribe before starting: a signal during start-up still ends the
	// daemon cleanly.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// Whoever started the daemon may stop reading its output: writes then
	// fail with EPIPE instead of killing it (Go's default for fd 1 and 2).
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	d, err := daemon.Start(daemon.Options{
		Workspace:   cfg.workspace,
		StateDir:    cfg.stateDir,
		Draft:       cfg.draft,
		Mount:       mountDir,
		AllowOther:  flagAllowOther,
		Passthrough: flagPassthrough,
		IOURing:     ioURing(),
		Debug:       flagDebug,
		Watch:       true,
		Command:     "serve",
		Version:     version(),
		Heavy:       heavyWorkFor,
		Fatal:       exitAfterBug,
		Logf:        logf,
	})
	if err != nil {
		return err
	}
	line := fmt.Sprintf("draftfs: serving %s (draft %s) on socket %s", cfg.workspace, cfg.draft, d.Socket())
	if mp := d.Mountpoint(cfg.draft); mp != "" {
		line += ", mounted at " + mp
	}
	if st, err := d.Draft().Status(); err == nil && len(st) > 0 {
		// From an earlier session: the agent starts on top of them.
		line += fmt.Sprintf("; the draft holds %s %s from before (draftfs status lists them)", thousands(len(st)), plural(len(st), "change", "changes"))
	}
	fmt.Println(line)
	select {
	case <-sigs:
	case <-d.Done():
	}
	return d.Close()
}
