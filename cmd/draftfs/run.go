package main

import (
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/fusefs"
	"github.com/draftfs/draftfs/protocol/control"
)

var runCmd = &cobra.Command{
	Use:   "run [--] CMD [ARGS...]",
	Short: "Run a command on the merged view, its writes landing in the draft",
	Long: `Runs CMD in a private mount namespace where the workspace's own path shows
the merged view (draft over buffers over disk), so absolute paths work and
every write, new file, deletion or rename lands in the draft, never on
disk. Review afterwards with draftfs status and diff.

It uses the mount of the running daemon (asking it to mount the draft
when it has none), or starts a daemon in this process for the command's
duration. The exit status is CMD's.`,
	Example: `  draftfs run -- make test
  draftfs run -- claude -p "fix the failing test"
  draftfs --draft experiment run -- sh -c 'sed -i s/foo/bar/ src/*.go'`,
	Args: args(cobra.MinimumNArgs(1)),
	RunE: func(cmd *cobra.Command, a []string) error {
		cfg, err := loadConfig()
		if err != nil {
			return err
		}
		mnt, stop, err := runMount(cfg)
		if err != nil {
			return err
		}
		code, err := fusefs.Run(cfg.workspace, mnt, a, [3]*os.File{os.Stdin, os.Stdout, os.Stderr})
		if serr := stop(); err == nil && serr != nil {
			logf("run: %v", serr)
		}
		if err != nil {
			return err
		}
		return exitStatus(code)
	},
}

func init() {
	runCmd.Flags().SetInterspersed(false) // flags after CMD are CMD's
	root.AddCommand(runCmd)
}

// runMount finds or makes a mount of the draft for run: the daemon's,
// or one served by this process until stop.
func runMount(cfg *config) (dir string, stop func() error, err error) {
	for attempt := 0; ; attempt++ {
		c, err := control.Dial(cfg.socket())
		if err == nil {
			defer c.Close()
			dir, err := c.Mount(control.DraftParams{Draft: cfg.draft})
			return dir, func() error { return nil }, err
		}
		if !errors.Is(err, control.ErrNoDaemon) {
			return "", nil, err
		}
		serveProcs()
		d, err := startDaemon(cfg, "run")
		if errors.Is(err, control.ErrRunning) && attempt == 0 {
			continue // one started meanwhile: use it
		}
		if err != nil {
			return "", nil, err
		}
		dir, err = d.Mount(cfg.draft, "")
		if err != nil {
			d.Close()
			return "", nil, err
		}
		return dir, d.Close, nil
	}
}
