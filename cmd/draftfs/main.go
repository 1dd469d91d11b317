// Command draftfs keeps what AI agents write in a draft over your
// workspace until you review and commit it. See README.md.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	// Before the other packages initialize (see its documentation).
	_ "github.com/draftfs/draftfs/cmd/draftfs/internal/prestart"
	"github.com/draftfs/draftfs/overlay"
)

// root is the draftfs command; each subcommand adds itself in its file's
// init.
var root = &cobra.Command{
	Use:   "draftfs",
	Short: "Keep what AI agents write in a reviewable draft over your workspace",
	Long: `draftfs merges your unsaved editor buffers over your workspace on disk,
so AI agents see what you see, and keeps every write, new file, deletion
and rename an agent makes in a draft until you review and commit it.

Agents reach the merged view through a FUSE mount (draftfs mount, draftfs
run), ACP (draftfs acp) or MCP (draftfs mcp). You review with status and
diff, then commit, discard or undo.

Exit status: 0 success, 1 refused (conflicts, nothing to undo, a bad
path), 2 usage error, 70 a daemon or draftfs mcp stopped by a bug (its
draft is recovered from its journal at the next start).`,
	Example: `  draftfs serve --mount /tmp/view     # daemon with the merged view at /tmp/view
  draftfs run -- make test            # run a command on the merged view
  draftfs status                      # what the agents changed
  draftfs diff                        # how
  draftfs commit                      # write it to disk (draftfs undo reverts)`,
	SilenceErrors: true,
	SilenceUsage:  true,
	Version:       version(),
	// No Args check: cobra's own finds unknown commands and suggests
	// the nearest (run reports them on one line).
	RunE: func(cmd *cobra.Command, args []string) error {
		cmd.SetOut(os.Stderr)
		cmd.Help()
		return usageError{errors.New("no command given")}
	},
}

// Global flags (see config).
var (
	flagWorkspace string
	flagState     string
	flagDraft     string
	flagIOURing   bool
)

func init() {
	pf := root.PersistentFlags()
	pf.StringVar(&flagWorkspace, "workspace", "", "the workspace directory (default: the nearest directory from the current one up that draftfs has state for, else the current one)")
	pf.StringVar(&flagState, "state", "", "where draftfs keeps its state (default: $XDG_STATE_HOME/draftfs, else ~/.local/state/draftfs)")
	pf.StringVar(&flagDraft, "draft", "main", "the draft to work on")
	pf.BoolVar(&flagIOURing, "io-uring", true, "serve the mounts' FUSE requests over io_uring where the kernel offers it (Linux 6.14+ with /sys/module/fuse/parameters/enable_uring on): less CPU per request; elsewhere, or with --io-uring=false, through reads and writes of /dev/fuse")
	root.MarkPersistentFlagDirname("workspace")
	root.MarkPersistentFlagDirname("state")
	root.RegisterFlagCompletionFunc("draft", completeDrafts)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError{err} })
}

func main() {
	tuneGC()
	os.Exit(run(os.Args[1:]))
}

// run executes the command line and returns the exit status.
func run(args []string) int {
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	var ex exitStatus
	if errors.As(err, &ex) {
		return int(ex)
	}
	name := "draftfs"
	if cmd != nil && cmd != root {
		name = cmd.CommandPath()
	}
	var ue usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(os.Stderr, "%s: %v (see %s --help)\n", name, ue.err, name)
		return 2
	case strings.HasPrefix(err.Error(), "unknown command "):
		msg, _, _ := strings.Cut(err.Error(), "\n") // cobra adds suggestions on lines of their own
		if len(args) > 0 {
			if s := root.SuggestionsFor(args[len(args)-1]); len(s) > 0 && strings.HasSuffix(msg, `for "draftfs"`) {
				msg += ": did you mean " + strings.Join(s, " or ") + "?"
			}
		}
		fmt.Fprintf(os.Stderr, "draftfs: %s (see draftfs --help)\n", msg)
		return 2
	}
	msg := oneLine(err)
	if h := hint(err); h != "" {
		msg += ": " + h
	}
	fmt.Fprintf(os.Stderr, "%s: %s\n", name, msg)
	return 1
}

// hint says what to do about the errors whose message does not.
func hint(err error) string {
	switch {
	case errors.Is(err, overlay.ErrNothingToUndo):
		return "every commit of the draft is already undone, or none was made"
	case errors.Is(err, overlay.ErrOutside):
		return "give a path inside the workspace, or choose the workspace with --workspace"
	}
	return ""
}

// exitAfterBug ends a daemon's process after a bug may have left a
// draft locked (daemon.Options.Fatal): status 70, EX_SOFTWARE.
func exitAfterBug() { os.Exit(70) }

// usageError: the command line is wrong (exit status 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// exitStatus ends the program with a status after the command has said
// what it had to (draftfs run: the command's status; a refused commit).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// oneLine keeps an error message on one line, without the package
// prefixes of the errors it wraps: it is for people.
func oneLine(err error) string {
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
	for _, p := range []string{"overlay: ", "buffers: ", "fusefs: ", "files: "} {
		msg = strings.ReplaceAll(msg, p, "")
	}
	return msg
}

// args wraps a positional-argument check so that its failure is a usage
// error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// version says which draftfs this is: the module version (a tag when
// installed with go install ...@vX, else "(devel)") and the VCS revision
// the binary was built from, with its commit time and "modified" when
// the checkout had uncommitted changes, so a bug report names the code.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	return versionOf(bi)
}

// versionOf spells version() from build information.
func versionOf(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev == "" {
		return v + " (no VCS revision: built outside a checkout, or with -buildvcs=false)"
	}
	if at != "" {
		at = " of " + at
	}
	return fmt.Sprintf("%s (revision %s%s%s)", v, rev, at, modified)
}
