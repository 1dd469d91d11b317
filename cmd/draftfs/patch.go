package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/protocol/control"
)

// patchHelp is what ? prints, as git add -p's help.
const patchHelp = `y - %[1]s this hunk
n - do not %[1]s this hunk
q - quit; do not %[1]s this hunk or any of the remaining ones
a - %[1]s this hunk and all later hunks in the file
d - do not %[1]s this hunk or any of the later hunks in the file
s - split the current hunk into smaller hunks
? - print help
`

// errNoTerminal: -p asks on a terminal, and there is none.
func errNoTerminal(cmd string) error {
	return fmt.Errorf("%s -p asks about each hunk on a terminal, and stdin or stdout is not one: list the hunks with `draftfs diff --json` and give their ids to `draftfs %s --hunk ID`", cmd, cmd)
}

// hunksToTake returns what a commit or discard (verb) takes: the hunks
// given, or with ask (-p) those chosen on the terminal among the changes
// below paths, and the paths, which -p consumes. Both are nil when the
// user chose nothing; it said so.
func hunksToTake(s *session, paths, given []string, ask bool, verb string) (hunks, rest []string, err error) {
	if !ask {
		if paths == nil {
			paths = []string{}
		}
		return given, paths, nil
	}
	if hunks, err = chooseHunks(s, paths, verb); err != nil || len(hunks) > 0 {
		return hunks, []string{}, err
	}
	fmt.Printf("nothing chosen, nothing to %s\n", verb)
	return nil, nil, nil
}

// chooseHunks shows the draft's hunks below paths one by one on the
// terminal and returns the IDs of those the user takes for verb
// ("commit", "discard"), as `git add -p` does.
func chooseHunks(s *session, paths []string, verb string) ([]string, error) {
	if !isTerminal(os.Stdin) || !isTerminal(os.Stdout) {
		return nil, errNoTerminal(verb)
	}
	diffs, err := s.Diff(s.cfg.draft, control.DiffOptions{Paths: paths})
	if err != nil {
		return nil, err
	}
	p := &patchWalk{in: bufio.NewReader(os.Stdin), out: os.Stdout, verb: verb, color: colorWanted(os.Stdout)}
	return p.walk(diffs)
}

// patchWalk asks about hunks: in and out are the terminal.
type patchWalk struct {
	in    *bufio.Reader
	out   io.Writer
	verb  string
	color bool
	taken []string
}

// walk asks about every hunk of diffs and returns the IDs taken.
func (p *patchWalk) walk(diffs []overlay.FileDiff) ([]string, error) {
	for _, d := range diffs {
		if d.Ignored {
			continue
		}
		quit, err := p.file(d)
		if err != nil || quit {
			return p.taken, err
		}
	}
	return p.taken, nil
}

// file asks about the hunks of one file; quit: the user is done.
func (p *patchWalk) file(d overlay.FileDiff) (quit bool, err error) {
	queue := append([]overlay.Hunk{}, d.Hunks...)
	if len(queue) == 1 && queue[0].Whole {
		printPatch(p.out, d.Patch, p.color)
	} else {
		header, _, _ := strings.Cut(d.Patch, "\n@@")
		printPatch(p.out, header+"\n", p.color)
	}
	for i := 0; i < len(queue); i++ {
		h := queue[i]
		if !h.Whole {
			printPatch(p.out, h.Text, p.color)
		}
		opts := "y,n,q,a,d"
		if len(h.Parts) > 0 {
			opts += ",s"
		}
		what := "this hunk"
		if h.Whole {
			what = "this change"
		}
		fmt.Fprintf(p.out, "(%d/%d) %s %s [%s,?]? ", i+1, len(queue), upperFirst(p.verb), what, opts)
		answer, err := p.in.ReadString('\n')
		if errors.Is(err, io.EOF) && answer == "" {
			fmt.Fprintln(p.out)
			return true, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return true, err
		}
		switch strings.TrimSpace(answer) {
		case "y":
			p.taken = append(p.taken, h.ID)
		case "n":
		case "q":
			return true, nil
		case "a":
			for _, rest := range queue[i:] {
				p.taken = append(p.taken, rest.ID)
			}
			return false, nil
		case "d":
			return false, nil
		case "s":
			if len(h.Parts) == 0 {
				fmt.Fprintln(p.out, "Sorry, cannot split this hunk")
				i--
				continue
			}
			fmt.Fprintf(p.out, "Split into %d hunks.\n", len(h.Parts))
			queue = append(queue[:i], append(append([]overlay.Hunk{}, h.Parts...), queue[i+1:]...)...)
			i--
		default:
			fmt.Fprintf(p.out, patchHelp, p.verb)
			i--
		}
	}
	return false, nil
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
