package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/buffers"
	"github.com/draftfs/draftfs/protocol/control"
)

var bufferCmd = &cobra.Command{
	Use:   "buffer",
	Short: "Stand in for an editor: open, save, close and list buffers",
	Long: `Buffers are the unsaved text of files open in an editor. Editor plugins
push them to the daemon over its control socket; these commands let a
script do the same. The merged view shows an open buffer's text instead
of the file on disk. Buffers live in the daemon: these commands need one
running (draftfs serve).`,
	Example: `  echo 'package main' | draftfs buffer open main.go
  draftfs buffer list
  draftfs buffer save main.go    # the editor wrote it to disk
  draftfs buffer close main.go`,
	Args: args(cobra.NoArgs),
	RunE: func(cmd *cobra.Command, _ []string) error {
		return usagef("give a subcommand: open, save, close or list")
	},
}

var flagBufferVersion int64

var bufferOpenCmd = &cobra.Command{
	Use:   "open PATH [--version N] < TEXT",
	Short: "Open or replace a buffer with stdin's text",
	Long: `Opens the buffer of PATH with the text read from stdin, or replaces it if
it is open, as an editor does when it opens a file or reloads it. The
text must be UTF-8. --version sets the buffer's version (default: one
above the open buffer's, else 1); conflict detection tells versions
apart, so give increasing ones.`,
	Example: `  printf 'draft text\n' | draftfs buffer open notes.txt
  draftfs buffer open src/main.go --version 7 < /tmp/main.go`,
	Args: args(cobra.ExactArgs(1)),
	RunE: func(cmd *cobra.Command, a []string) error {
		if isTerminal(os.Stdin) {
			fmt.Fprintf(os.Stderr, "draftfs buffer open: reading the text of %s from stdin; end it with Ctrl-D (or pipe it in: draftfs buffer open %s < FILE)\n", a[0], a[0])
		}
		text, err := io.ReadAll(os.Stdin)
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		if !utf8.Valid(text) {
			return errors.New("stdin is not UTF-8 text: buffers hold an editor's text")
		}
		s, paths, err := connectFor(a, daemonOnly)
		if err != nil {
			return err
		}
		defer s.close()
		version := flagBufferVersion
		if !cmd.Flags().Changed("version") {
			if version, err = nextVersion(s, paths[0]); err != nil {
				return err
			}
		}
		return s.OpenBuffer(paths[0], version, string(text))
	},
}

// nextVersion is one above the version of the buffer open at path, or 1.
func nextVersion(s *session, path string) (int64, error) {
	list, err := s.Buffers()
	if err != nil {
		return 0, err
	}
	for _, b := range list {
		if filepath.Join(s.cfg.workspace, filepath.FromSlash(b.Path)) == path {
			return b.Version + 1, nil
		}
	}
	return 1, nil
}

var bufferSaveCmd = &cobra.Command{
	Use:   "save PATH",
	Short: "Mark a buffer saved: the disk now holds its text",
	Long: `Tells the daemon that the editor wrote the buffer of PATH to disk: the
buffer stays open but is no longer dirty, so the merged view shows the
disk.`,
	Example:           `  draftfs buffer save src/main.go`,
	Args:              args(cobra.ExactArgs(1)),
	ValidArgsFunction: completeBuffers,
	RunE: func(cmd *cobra.Command, a []string) error {
		return onBuffer(a[0], (*session).SaveBuffer)
	},
}

var bufferCloseCmd = &cobra.Command{
	Use:               "close PATH",
	Short:             "Close a buffer",
	Long:              `Closes the buffer of PATH, as an editor does when it closes the file: the merged view shows the disk again.`,
	Example:           `  draftfs buffer close src/main.go`,
	Args:              args(cobra.ExactArgs(1)),
	ValidArgsFunction: completeBuffers,
	RunE: func(cmd *cobra.Command, a []string) error {
		return onBuffer(a[0], (*session).CloseBuffer)
	},
}

// onBuffer calls op on the daemon for the buffer at path.
func onBuffer(path string, op func(*session, string) error) error {
	s, err := connectDaemon()
	if err != nil {
		return err
	}
	defer s.close()
	paths, err := s.paths([]string{path})
	if err != nil {
		return err
	}
	if err := op(s, paths[0]); errors.Is(err, buffers.ErrNotOpen) {
		return fmt.Errorf("no buffer is open for %s (draftfs buffer list shows the open ones)", path)
	} else if err != nil {
		return err
	}
	return nil
}

var flagBufferJSON bool

var bufferListCmd = &cobra.Command{
	Use:   "list [--json]",
	Short: "List the open buffers",
	Long: `Lists the buffers open in the daemon: path, version, whether it differs
from what was last saved (dirty), and its size. Without a daemon there
are none.

--json prints an array of {"path", "version", "dirty", "size"}.`,
	Example: `  draftfs buffer list
  draftfs buffer list --json`,
	Args: args(cobra.NoArgs),
	RunE: func(cmd *cobra.Command, _ []string) error {
		var list []buffers.Info
		s, err := connectDaemon()
		switch {
		case errors.Is(err, control.ErrNoDaemon):
			list = []buffers.Info{}
		case err != nil:
			return err
		default:
			defer s.close()
			if list, err = s.Buffers(); err != nil {
				return err
			}
		}
		if flagBufferJSON {
			return printJSON(list)
		}
		for _, b := range list {
			state := "saved"
			if b.Dirty {
				state = "dirty"
			}
			fmt.Printf("%s  version %d  %s  %d %s\n", b.Path, b.Version, state, b.Size, plural(int(b.Size), "byte", "bytes"))
		}
		return nil
	},
}

// connectDaemon opens a session with the daemon only: buffers live
// there. Without one the error wraps control.ErrNoDaemon and says what
// to do.
func connectDaemon() (*session, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	c, err := control.Dial(cfg.socket())
	if errors.Is(err, control.ErrNoDaemon) {
		return nil, fmt.Errorf("%w, and buffers live in the daemon: start one with `draftfs serve` or `draftfs mount DIR`", control.ErrNoDaemon)
	}
	if err != nil {
		return nil, err
	}
	return &session{Client: c, cfg: cfg, daemon: true, close: func() { c.Close() }}, nil
}

func init() {
	bufferOpenCmd.Flags().Int64Var(&flagBufferVersion, "version", 0, "the buffer's version `N`")
	bufferListCmd.Flags().BoolVar(&flagBufferJSON, "json", false, "print JSON")
	bufferCmd.AddCommand(bufferOpenCmd, bufferSaveCmd, bufferCloseCmd, bufferListCmd)
	root.AddCommand(bufferCmd)
}
