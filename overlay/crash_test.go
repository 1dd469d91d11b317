//go:build linux

package overlay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
)

// The crash test runs a workload on the engine in a worker (see
// worker_test.go), kills it with SIGKILL at a random moment, reopens the state and checks that every acknowledged change is
// there, the one in flight is either wholly there or not, and a commit
// cut short has been finished: the draft's paths and the disk agree, and
// nothing of the commit's machinery is left in the workspace.

// crashOp is one step of the workload: kind W (write Name=Content),
// D (delete Name), R (rename Name to To), C (commit all).
type crashOp struct {
	Kind, Name, To, Content string
}

func (o crashOp) String() string {
	b, _ := json.Marshal(o)
	return string(b)
}

func parseCrashOp(s string) crashOp {
	var o crashOp
	json.Unmarshal([]byte(s), &o)
	return o
}

// nextCrashOp picks the workload's next step from a model of the files.
func nextCrashOp(r *rand.Rand, model map[string]string, i int) crashOp {
	name := fmt.Sprintf("d%d/f%02d", r.Intn(3), r.Intn(30))
	switch n := r.Intn(20); {
	case n == 0:
		return crashOp{Kind: "C"}
	case n < 3 && len(model) > 0:
		for k := range model {
			return crashOp{Kind: "D", Name: k}
		}
	case n < 6 && len(model) > 0:
		for k := range model {
			if k != name {
				return crashOp{Kind: "R", Name: k, To: name}
			}
		}
	}
	return crashOp{Kind: "W", Name: name, Content: fmt.Sprintf("v%d %s\n", i, strings.Repeat("x", r.Intn(3000)))}
}

func applyCrashOp(model map[string]string, o crashOp) {
	switch o.Kind {
	case "W":
		model[o.Name] = o.Content
	case "D":
		delete(model, o.Name)
	case "R":
		model[o.To] = model[o.Name]
		delete(model, o.Name)
	}
}

// crashWorker applies the operations it reads and acknowledges each.
func crashWorker(d *Draft) {
	f := d.Fs(SourceMount)
	out := bufio.NewWriter(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		o := parseCrashOp(in.Text())
		var err error
		switch o.Kind {
		case "W":
			if err = f.MkdirAll(parentOf(o.Name), 0o755); err == nil {
				err = afero.WriteFile(f, o.Name, []byte(o.Content), 0o644)
			}
		case "D":
			err = f.Remove(o.Name)
		case "R":
			if err = f.MkdirAll(parentOf(o.To), 0o755); err == nil {
				err = f.Rename(o.Name, o.To)
			}
		case "C":
			_, err = d.Commit(CommitOptions{Force: true})
		}
		if err != nil {
			fmt.Fprintln(out, "ERR", o, err)
			out.Flush()
			os.Exit(1)
		}
		fmt.Fprintln(out, "ACK")
		out.Flush()
	}
}

func TestCrashKeepsAcknowledgedChanges(t *testing.T) {
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	r, seed := killSeed(t)
	root, state := t.TempDir(), t.TempDir()
	model := map[string]string{}
	step, commits := 0, 0
	var history []string // each op sent, for a failure's message
	for round := range rounds {
		wk := startWorker(t, "crash", root, state)
		// The clock starts at the first acknowledgement: a worker built
		// with -race takes longer than that to start.
		runFor := time.Duration(50+r.Intn(400)) * time.Millisecond
		var killAt time.Time
		var pending *crashOp
		midOp := r.Intn(2) == 0
		ops := 0
		// The last round goes on until some commit was acknowledged: on
		// a loaded machine the rounds may be over before one came up.
		for ops == 0 || time.Now().Before(killAt) || (round == rounds-1 && commits == 0) {
			o := nextCrashOp(r, model, step)
			step++
			pending = &o
			history = append(history, fmt.Sprintf("round %d: %v", round, o))
			wk.send(o.String())
			if line := wk.line(); line != "ACK" {
				t.Fatalf("round %d (seed %d): worker: %q", round, seed, line)
			}
			applyCrashOp(model, o)
			pending = nil
			if ops++; ops == 1 {
				killAt = time.Now().Add(runFor)
			}
			if o.Kind == "C" {
				commits++
			}
		}
		if midOp {
			// Kill in the middle of an operation, not between two.
			o := nextCrashOp(r, model, step)
			if r.Intn(2) == 0 {
				o = crashOp{Kind: "C"} // the riskiest moment
			}
			step++
			pending = &o
			history = append(history, fmt.Sprintf("round %d (killed in it): %v", round, o))
			wk.send(o.String())
			time.Sleep(time.Duration(r.Intn(5000)) * time.Microsecond)
		}
		t.Logf("round %d: %d operations acknowledged, killed %s", round, ops, map[bool]string{true: "mid-operation " + fmt.Sprint(pending), false: "between operations"}[midOp])
		wk.kill()

		w, d := reopenAfterKill(t, root, state, fmt.Sprintf("round %d (seed %d)", round, seed))
		got := crashView(t, d.Fs(SourceCLI))
		if !equalMaps(got, model) {
			with := map[string]string{}
			for k, v := range model {
				with[k] = v
			}
			if pending != nil {
				applyCrashOp(with, *pending)
				if g, ok := got[pending.Name]; ok && pending.Kind == "W" && strings.HasPrefix(pending.Content, g) {
					// Killed between the write's O_TRUNC and its data,
					// as a crash can leave any file written so.
					with[pending.Name] = g
				}
			}
			if !equalMaps(got, with) {
				diff := differing(got, with)
				w.Close()
				t.Fatalf("round %d (seed %d): merged view after crash differs at %v\n got %v\nwant %v\n(or with the pending %v)\nthe operations on those paths and the commits:\n%s", round, seed, diff, keys(got), keys(model), pending, strings.Join(touching(history, diff), "\n"))
			}
			model = with
		}
		// The draft and the disk agree on every path the draft no
		// longer holds.
		st, err := d.Status()
		if err != nil {
			t.Fatal(err)
		}
		inDraft := map[string]bool{}
		for _, s := range st {
			inDraft[s.Path] = true
			if s.From != "" {
				inDraft[s.From] = true
			}
		}
		for k, v := range model {
			if inDraft[k] {
				continue
			}
			b, err := os.ReadFile(filepath.Join(root, k))
			if err != nil || string(b) != v {
				t.Fatalf("round %d (seed %d): %s not in the draft and not on disk as committed (%v)", round, seed, k, err)
			}
		}
		leftovers, _ := filepath.Glob(filepath.Join(root, ".draftfs-commit-*"))
		more, _ := filepath.Glob(filepath.Join(root, "*/.*.draftfs-*"))
		if len(leftovers)+len(more) > 0 {
			t.Fatalf("round %d: commit machinery left on disk: %v %v", round, leftovers, more)
		}
		w.Close()
	}
	if commits == 0 {
		t.Fatalf("seed %d: the workload committed nothing; the test proved little", seed)
	}
}

func crashView(t *testing.T, f *Fs) map[string]string {
	out := map[string]string{}
	afero.Walk(f, "/", func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatalf("walk %s: %v", p, err)
		}
		if fi.Mode().IsRegular() {
			b, err := afero.ReadFile(f, p)
			if err != nil {
				t.Fatalf("read %s: %v", p, err)
			}
			out[strings.TrimPrefix(p, "/")] = string(b)
		}
		return nil
	})
	return out
}

// touching is the ops of history that name one of the paths (as
// differing lists them) or commit.
func touching(history, paths []string) []string {
	var out []string
	for _, h := range history {
		for _, p := range paths {
			p, _, _ = strings.Cut(p, " ")
			if strings.Contains(h, `"`+p+`"`) || strings.Contains(h, `"Kind":"C"`) {
				out = append(out, h[:min(len(h), 120)])
				break
			}
		}
	}
	return out
}

func keys(m map[string]string) []string { return sortedKeys(m) }

// differing lists the keys where a and b differ, with a's value's
// length ("-" when missing).
func differing(a, b map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(a) {
		if bv, ok := b[k]; !ok || bv != a[k] {
			out = append(out, fmt.Sprintf("%s (%d bytes)", k, len(a[k])))
		}
	}
	for _, k := range sortedKeys(b) {
		if _, ok := a[k]; !ok {
			out = append(out, k+" (-)")
		}
	}
	return out
}
