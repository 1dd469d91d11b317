package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/protocol/control"
)

var (
	flagCheckJSON   bool
	flagCheckRepair bool
)

var checkCmd = &cobra.Command{
	Use:   "check [--repair] [--json]",
	Short: "Verify a draft's state offline and say what can be recovered",
	Long: `Verifies the draft's state files while no daemon runs: the database
page by page, every record of it and of the write-ahead log, and that
the records and the draft's data files agree. It writes nothing, and
prints each problem with the file, the offset when there is one, and
what can be recovered. Exit status 0 when the state is sound, 1 when it
found a problem.

--repair keeps each damaged file aside (renamed with a .damaged-TIME
suffix), builds a new database from every record that could still be
read, and moves data files no record names into lost+found/ in the
draft's state directory (copy back by hand what you need), so that the
draft opens again.

--json prints {"draft", "dir", "entries", "inodes", "commits",
"walRecords", "tornBytes"?, "size", "problems": [{"file", "offset",
"what", "recover"}], "repaired"?}.`,
	Example: `  draftfs check
  draftfs check --repair`,
	Args: args(cobra.NoArgs),
	RunE: func(cmd *cobra.Command, _ []string) error {
		cfg, err := loadConfig()
		if err != nil {
			return err
		}
		if c, err := control.Dial(cfg.socket()); err == nil {
			c.Close()
			return fmt.Errorf("a daemon serves this workspace (its socket is %s): stop it first; check reads the state offline", cfg.socket())
		} else if !errors.Is(err, control.ErrNoDaemon) {
			return err
		}
		r, err := overlay.CheckDraft(cfg.stateDir, cfg.draft, flagCheckRepair)
		if err != nil {
			return err
		}
		if flagCheckJSON {
			if err := printJSON(r); err != nil {
				return err
			}
		} else {
			printCheck(os.Stdout, r)
		}
		if len(r.Problems) > 0 && len(r.Repaired) == 0 {
			return exitStatus(1)
		}
		return nil
	},
}

func init() {
	checkCmd.Flags().BoolVar(&flagCheckJSON, "json", false, "print JSON")
	checkCmd.Flags().BoolVar(&flagCheckRepair, "repair", false, "keep damaged files aside and rebuild the draft from what can be read")
	root.AddCommand(checkCmd)
}

func printCheck(w io.Writer, r *overlay.CheckReport) {
	fmt.Fprintf(w, "draft %s (%s): %d entries, %d inodes, %d commits, %d records in the log not checkpointed",
		r.Draft, r.Dir, r.Entries, r.Inodes, r.Commits, r.LogRecords)
	if r.TornBytes > 0 {
		fmt.Fprintf(w, ", a torn tail of %d bytes (a write a crash cut short; dropped at the next start)", r.TornBytes)
	}
	fmt.Fprintf(w, "; %s on disk\n", overlay.FormatSize(r.Size))
	for _, p := range r.Problems {
		where := p.File
		if p.Offset >= 0 {
			where = fmt.Sprintf("%s at offset %d", p.File, p.Offset)
		}
		fmt.Fprintf(w, "problem: %s: %s\n", where, p.What)
		if p.Recover != "" {
			fmt.Fprintf(w, "  recover: %s\n", p.Recover)
		}
	}
	for _, s := range r.Repaired {
		fmt.Fprintf(w, "repaired: %s\n", s)
	}
	if len(r.Problems) == 0 {
		fmt.Fprintln(w, "ok")
	}
}
