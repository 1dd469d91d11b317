package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/protocol/control"
)

var (
	flagCommitDryRun bool
	flagCommitForce  bool
	flagCommitJSON   bool
	flagCommitSkipIg bool
	flagAllowSetid   bool
	flagAllowOwner   bool
	flagCommitHunks  []string
	flagCommitPatch  bool
)

var commitCmd = &cobra.Command{
	Use:   "commit [--dry-run] [--force] [--skip-ignored] [--allow-setid] [--allow-owner] [--json] [-p | --hunk ID...] [PATH...]",
	Short: "Write the draft's changes to disk",
	Long: `Applies the draft's changes (all, or below each PATH) to the workspace on
disk: each file atomically (a temporary file renamed over it, its mode
kept), deletions, renames and directories. Open editor buffers of the
committed files are told to reload. What the commit overwrote or deleted
is kept, so draftfs undo can restore it.

A conflict is a file that you changed (on disk or in an editor) since the
agent first wrote it. Conflicts that merge cleanly (a 3-way merge over
what the agent started from) are merged. Any other conflict refuses the
whole commit: nothing is written, each conflicting path is listed, and
the status is 1. Resolve each one by editing the draft through the mount,
dropping the agent's change with draftfs discard PATH, or letting the
draft win with --force.

What git ignores (.venv/, node_modules/, git's own .git/) is committed
too, folded in the report as in draftfs status; --skip-ignored leaves it
in the draft. A change that changes nothing (a touch, a rewrite with the
same content) is not committed; the draft forgets it.

A commit never writes set-uid, set-gid or sticky bits, nor gives a path
another owner than the disk has (or, for a new path, would give it),
unless asked: such a path refuses the commit like a conflict, --force or
not, until you commit with --allow-setid or --allow-owner, or chmod or
chown it in the view. A path whose parent directory is a symlink on disk
now refuses the commit too: commit and undo never go through one.

-p (--patch) shows each hunk of the changes (below each PATH) on the
terminal and asks whether to commit it, as git add -p does: y yes, n
no, q quit, a this and the file's later hunks, d none of the file's
later hunks, s split the hunk into smaller ones, ? help. Then it
commits the hunks chosen: each file gets what you have with just those
hunks made (merged 3-way with your changes, atomically, undone by
draftfs undo like any commit), and the rest of its change stays in the
draft. --hunk ID commits the hunks whose ids draftfs diff --json lists
(repeat it, or separate ids with commas); an id names one change for as
long as neither the draft nor your file changes, and one that names
nothing now refuses the commit (status 1): list the hunks again. A
file's mode change goes with its last hunk; a new, deleted, renamed or
binary file is one hunk.

--dry-run reports what a commit would do (status 1 if it would be
refused), with a count of each kind of change. --json prints the report as JSON: {"id", "applied": [status
entries], "merged"?: [paths], "conflicts"?: [{"path", "reason"}]}.`,
	Example: `  draftfs commit
  draftfs commit src/ README.md
  draftfs commit --dry-run
  draftfs commit --force src/main.go
  draftfs commit --allow-setid bin/tool
  draftfs commit -p src/
  draftfs commit --hunk 3f2a9c41d0be,77c1e0a2b9f4`,
	ValidArgsFunction: completeChanged,
	RunE: func(cmd *cobra.Command, a []string) error {
		switch {
		case len(flagCommitHunks) > 0 && (len(a) > 0 || flagCommitPatch):
			return usagef("give PATHs (with or without -p) or --hunk IDs, not both")
		case flagCommitPatch && (flagCommitJSON || flagCommitDryRun):
			return usagef("-p asks on the terminal: it takes neither --json nor --dry-run")
		}
		s, paths, err := connectFor(a, readWrite)
		if err != nil {
			return err
		}
		defer s.close()
		hunks, paths, err := hunksToTake(s, paths, flagCommitHunks, flagCommitPatch, "commit")
		if err != nil || paths == nil && hunks == nil {
			return err
		}
		var prog *progress
		var onProgress func(done, total int)
		if !flagCommitJSON && !flagCommitDryRun {
			prog = &progress{w: os.Stderr, tty: isTerminal(os.Stderr)}
			onProgress = prog.update
		}
		res, err := s.Commit(s.cfg.draft, control.CommitOptions{
			Paths: paths, Hunks: hunks, Force: flagCommitForce, DryRun: flagCommitDryRun,
			SkipIgnored: flagCommitSkipIg,
			AllowSetid:  flagAllowSetid, AllowOwner: flagAllowOwner,
		}, onProgress)
		prog.finish()
		refused := errors.Is(err, overlay.ErrConflict) && res != nil
		if err != nil && !refused {
			return err
		}
		if refused || (res.DryRun && len(res.Conflicts) > 0 && !flagCommitForce) {
			if flagCommitJSON {
				printJSON(res)
			} else if res.DryRun {
				printCommit(os.Stdout, res)
			}
			printRefusal(os.Stderr, s.cfg, res)
			return exitStatus(1)
		}
		if flagCommitJSON {
			return printJSON(res)
		}
		printCommit(os.Stdout, res)
		return nil
	},
}

func init() {
	f := commitCmd.Flags()
	f.BoolVarP(&flagCommitDryRun, "dry-run", "n", false, "report what would be committed, change nothing")
	f.BoolVar(&flagCommitForce, "force", false, "commit conflicting paths too: the draft wins")
	f.BoolVar(&flagCommitJSON, "json", false, "print the report as JSON")
	f.BoolVar(&flagCommitSkipIg, "skip-ignored", false, "leave what git ignores (and .git/) in the draft")
	f.BoolVar(&flagAllowSetid, "allow-setid", false, "commit set-uid, set-gid and sticky bits the draft gives paths")
	f.BoolVar(&flagAllowOwner, "allow-owner", false, "commit the owners the draft gives paths where they differ from the disk's")
	f.BoolVarP(&flagCommitPatch, "patch", "p", false, "choose hunk by hunk on the terminal what to commit, as git add -p")
	f.StringSliceVar(&flagCommitHunks, "hunk", nil, "commit the hunk with this id (from draftfs diff --json); repeat, or separate with commas")
	root.AddCommand(commitCmd)
}

// printCommit reports a commit or dry run.
func printCommit(w io.Writer, res *overlay.CommitResult) {
	if len(res.Applied) == 0 {
		fmt.Fprintln(w, "nothing to commit: the draft changes nothing")
		return
	}
	// A merged path is a change, not a conflict: say how it is made.
	merged := map[string]bool{}
	for _, m := range res.Merged {
		merged[m] = true
	}
	applied := make([]overlay.StatusEntry, len(res.Applied))
	for i, e := range res.Applied {
		if merged[e.Path] {
			e.Conflict = false
			e.Path += " (merged with your changes)"
			e.Ignored = false // on a line of its own
		}
		applied[i] = e
	}
	printStatus(w, applied, false)
	n := len(res.Applied)
	if res.DryRun {
		fmt.Fprintf(w, "would commit %s %s (%s)\n", thousands(n), plural(n, "change", "changes"), summary(res))
		return
	}
	fmt.Fprintf(w, "committed %s %s (%s) as commit %d; draftfs undo reverts it\n", thousands(n), plural(n, "change", "changes"), summary(res), res.ID)
}

// summary counts a commit's changes by kind: "3 modified, 1,479 added
// (1,479 ignored by git), 1 merged".
func summary(res *overlay.CommitResult) string {
	count := map[string]int{}
	ignored := 0
	for _, e := range res.Applied {
		count[e.Change]++
		if e.Ignored {
			ignored++
		}
	}
	var parts []string
	for _, k := range []string{overlay.StatusModified, overlay.StatusAdded, overlay.StatusDeleted, overlay.StatusRenamed} {
		if count[k] > 0 {
			parts = append(parts, thousands(count[k])+" "+k)
		}
	}
	if len(res.Merged) > 0 {
		parts = append(parts, thousands(len(res.Merged))+" merged")
	}
	if len(res.Conflicts) > 0 {
		parts = append(parts, thousands(len(res.Conflicts))+" in conflict")
	}
	if ignored > 0 {
		parts = append(parts, thousands(ignored)+" of them ignored by git")
	}
	return strings.Join(parts, ", ")
}

// printRefusal explains a commit refused for conflicts and how to
// resolve each one.
func printRefusal(w io.Writer, cfg *config, res *overlay.CommitResult) {
	verb := "commit refused, nothing written"
	if res.DryRun {
		verb = "commit would be refused"
	}
	n := len(res.Conflicts)
	fmt.Fprintf(w, "draftfs commit: %s: %d %s cannot be committed as %s:\n",
		verb, n, plural(n, "path", "paths"), plural(n, "it is", "they are"))
	for _, c := range res.Conflicts {
		fmt.Fprintf(w, "  C %s: %s\n", c.Path, c.Reason)
	}
	draft := ""
	if cfg.draft != overlay.DefaultDraft {
		draft = " --draft " + cfg.draft
	}
	fmt.Fprintf(w, "resolve each: edit the draft's version through the mount, drop the agent's change with `draftfs%s discard PATH`, or let the draft win with `draftfs%s commit --force PATH`\n", draft, draft)
}

// progressMin is the size of commit that shows progress.
const progressMin = 100

// progress shows a commit's progress on stderr: one line redrawn on a
// terminal, else a line a second. finish accepts a nil receiver.
type progress struct {
	w     io.Writer
	tty   bool
	last  time.Time
	shown bool
}

func (p *progress) update(done, total int) {
	if total < progressMin {
		return
	}
	switch {
	case p.tty:
		fmt.Fprintf(p.w, "\rcommitting: %d/%d", done, total)
		p.shown = true
	case done == total || time.Since(p.last) >= time.Second:
		fmt.Fprintf(p.w, "draftfs commit: %d/%d\n", done, total)
		p.last = time.Now()
	}
}

// finish clears a progress line from the terminal.
func (p *progress) finish() {
	if p != nil && p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
