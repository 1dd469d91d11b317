package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay"
)

// hunkBase is a file whose lines 2, 4 and 18 the tests' agent changes:
// two hunks, the first of two changes that split.
var hunkBase = func() string {
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}()

// hunkAgent is hunkBase with lines 2, 4 and 18 changed, with only the
// lines named.
func hunkAgent(lines ...int) string {
	s := hunkBase
	for _, l := range lines {
		s = strings.Replace(s, fmt.Sprintf("\n%d\n", l), fmt.Sprintf("\nline %d\n", l), 1)
	}
	return s
}

// diffJSON is what draftfs diff --json prints.
func (f *fixture) diffJSON(args ...string) []overlay.FileDiff {
	f.t.Helper()
	var out []overlay.FileDiff
	if err := json.Unmarshal([]byte(f.ok(append([]string{"diff", "--json"}, args...)...).out), &out); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// TestCommitHunkIDs: commit --hunk writes exactly the chosen hunks to
// disk, the draft keeps the rest, undo restores both; discard --hunk
// drops one hunk from the draft.
func TestCommitHunkIDs(t *testing.T) {
	f := newFixture(t)
	f.file("f", hunkBase)
	f.serve("")
	if err := f.agent().WriteFile("f", []byte(hunkAgent(2, 4, 18)), 0o644); err != nil {
		t.Fatal(err)
	}
	diffs := f.diffJSON()
	if len(diffs) != 1 || len(diffs[0].Hunks) != 2 || len(diffs[0].Hunks[0].Parts) != 2 {
		t.Fatalf("diff --json: %+v", diffs)
	}
	hs := diffs[0].Hunks
	// Line 4 (the second part of the first hunk) and line 18.
	f.ok("commit", "--hunk", hs[0].Parts[1].ID+","+hs[1].ID)
	if got := f.disk("f"); got != hunkAgent(4, 18) {
		t.Fatalf("disk: %q", got)
	}
	left := f.diffJSON()
	if len(left) != 1 || len(left[0].Hunks) != 1 || !strings.Contains(left[0].Hunks[0].Text, "+line 2\n") || strings.Count(left[0].Patch, "\n+") != 2 {
		t.Fatalf("left in the draft: %+v", left)
	}
	if r := f.run("commit", "--hunk", hs[1].ID); r.code != 1 || !strings.Contains(r.err, "no such hunk") {
		t.Fatalf("stale hunk: %s", r)
	}
	f.ok("undo")
	if got := f.disk("f"); got != hunkBase {
		t.Fatalf("disk after undo: %q", got)
	}
	if again := f.diffJSON(); len(again) != 1 || again[0].Patch != diffs[0].Patch || again[0].Hunks[0].ID != hs[0].ID {
		t.Fatalf("diff after undo: %+v", again)
	}
	f.ok("discard", "--hunk", hs[1].ID)
	if got := f.disk("f"); got != hunkBase {
		t.Fatalf("disk after discard: %q", got)
	}
	if b, err := f.agent().ReadFile("f", 1<<20); err != nil || string(b) != hunkAgent(2, 4) {
		t.Fatalf("view after discard: %q %v", b, err)
	}
	if r := f.run("commit", "--hunk", "x", "f"); r.code != 2 {
		t.Fatalf("--hunk with a path: %s", r)
	}
}

// TestCommitPatchTerminal drives commit -p on a pseudo-terminal: split
// the first hunk, take its second part, skip the first, take the last
// hunk; then discard -p drops what is left. Without a terminal -p
// refuses.
func TestCommitPatchTerminal(t *testing.T) {
	f := newFixture(t)
	f.file("f", hunkBase)
	f.serve("")
	if err := f.agent().WriteFile("f", []byte(hunkAgent(2, 4, 18)), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := f.run("commit", "-p"); r.code != 1 || !strings.Contains(r.err, "terminal") {
		t.Fatalf("commit -p without a terminal: %s", r)
	}
	term := startPTY(t, f.cmd("commit", "-p"))
	term.answer("Commit this hunk [y,n,q,a,d,s,?]? ", "?")
	term.answer("s - split the current hunk", "s")
	term.expect("Split into 2 hunks.")
	term.answer("(1/3) Commit this hunk [y,n,q,a,d,?]? ", "n")
	term.answer("(2/3) Commit this hunk [y,n,q,a,d,?]? ", "y")
	term.answer("(3/3) Commit this hunk [y,n,q,a,d,?]? ", "y")
	term.expect("draftfs undo reverts it")
	if err := term.wait(); err != nil {
		t.Fatalf("commit -p: %v\n%s", err, term.output())
	}
	if got := f.disk("f"); got != hunkAgent(4, 18) {
		t.Fatalf("disk: %q\n%s", got, term.output())
	}
	term = startPTY(t, f.cmd("discard", "-p"))
	term.answer("(1/1) Discard this hunk [y,n,q,a,d,?]? ", "y")
	term.expect("discarded hunks of f")
	if err := term.wait(); err != nil {
		t.Fatalf("discard -p: %v\n%s", err, term.output())
	}
	if st := f.ok("status").out; st != "" {
		t.Fatalf("status after discard -p: %q", st)
	}
	f.ok("undo")
	if got := f.disk("f"); got != hunkBase {
		t.Fatalf("disk after undo: %q", got)
	}
}

// pty is a command running on a pseudo-terminal of its own.
type pty struct {
	t    *testing.T
	m    *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	seen int // output up to here was matched
	// exited is closed when the command ended, with err.
	exited chan struct{}
	err    error
}

// startPTY starts c with a new pseudo-terminal as its controlling
// terminal, stdin, stdout and stderr.
func startPTY(t *testing.T, c *exec.Cmd) *pty {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c.Stdin, c.Stdout, c.Stderr = s, s, s
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	c.Env = append(c.Env, "TERM=dumb")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	p := &pty{t: t, m: m, exited: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		p.err = c.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			c.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// expect waits until the output after what was matched so far holds s.
func (p *pty) expect(s string) {
	p.t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // a watchdog, not a timing
	for {
		p.mu.Lock()
		rest := p.out.String()[p.seen:]
		if i := strings.Index(rest, s); i >= 0 {
			p.seen += i + len(s)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		if time.Now().After(deadline) {
			p.t.Fatalf("no %q on the terminal; it shows:\n%s", s, p.output())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// answer waits for prompt and types line.
func (p *pty) answer(prompt, line string) {
	p.t.Helper()
	p.expect(prompt)
	if _, err := p.m.WriteString(line + "\n"); err != nil {
		p.t.Fatal(err)
	}
}

func (p *pty) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// wait waits for the command to end.
func (p *pty) wait() error {
	select {
	case <-p.exited:
		return p.err
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("still running after 2 minutes")
	}
}
