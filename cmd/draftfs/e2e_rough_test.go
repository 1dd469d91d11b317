package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The small things a new user meets: each says what happened in words
// that fit.

// TestRoughEdges: suggestions for a mistyped command, buffer and
// discard errors in plain words said once.
func TestRoughEdges(t *testing.T) {
	f := newFixture(t)
	f.file("a.txt", "a\n")
	r := f.run("stauts")
	if r.code != 2 || !strings.Contains(r.err, "did you mean status?") || strings.Count(r.err, "\n") != 1 {
		t.Errorf("draftfs stauts: %s; want a suggestion on one line", r)
	}
	r = f.run("discard", "a.txt")
	if r.code != 1 || strings.Count(r.err, "no draft changes") != 1 {
		t.Errorf("draftfs discard a.txt: %s; want the reason said once", r)
	}
	f.serve("")
	r = f.run("buffer", "close", "a.txt")
	if r.code != 1 || !strings.Contains(r.err, "no buffer is open for a.txt") || strings.Contains(r.err, "didOpen") {
		t.Errorf("draftfs buffer close a.txt: %s; want plain words", r)
	}
}

// TestBufferOpenOnTerminal: buffer open with a terminal for stdin says
// that it reads the text from there, instead of waiting silently.
func TestBufferOpenOnTerminal(t *testing.T) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer master.Close()
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("pseudo-terminal number: %v", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the pseudo-terminal: %v", err)
	}
	defer tty.Close()
	f := newFixture(t)
	c := f.cmd("buffer", "open", "a.txt")
	c.Stdin = tty
	stderr, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	said := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stderr).ReadString('\n')
		said <- line
	}()
	select {
	case line := <-said:
		if !strings.Contains(line, "reading the text of a.txt from stdin") || !strings.Contains(line, "Ctrl-D") {
			t.Errorf("buffer open on a terminal said %q", line)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("buffer open on a terminal said nothing")
	}
	master.Write([]byte("text\n\x04"))
	waitExit(t, c, "buffer open after Ctrl-D")
}

// waitExit waits for a started command to end, killing it and failing
// the test if it does not in a while.
func waitExit(t *testing.T, c *exec.Cmd, what string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		c.Process.Kill()
		<-done
		t.Errorf("%s did not end", what)
	}
}

// TestMountWarnings: mounting over a non-empty directory or another
// draftfs mount warns; a second daemon says where the first is
// mounted; the ready line mentions changes from an earlier session.
func TestMountWarnings(t *testing.T) {
	f := newFixture(t)
	f.file("a.txt", "a\n")
	mnt := filepath.Join(f.tmp, "view")
	os.MkdirAll(mnt, 0o755)
	os.WriteFile(filepath.Join(mnt, "mine.txt"), []byte("hidden\n"), 0o644)
	d := f.serve(mnt)
	if err := os.WriteFile(filepath.Join(mnt, "a.txt"), []byte("agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := f.run("serve", "--mount", filepath.Join(f.tmp, "other"))
	if r.code != 1 || !strings.Contains(r.err, "already running") || !strings.Contains(r.err, "mounted at "+mnt) {
		t.Errorf("a second daemon: %s; want it to say where the first is mounted", r)
	}

	g := newFixture(t)
	d2 := g.serve(mnt)
	d2.mount = "" // its stop finds the first mount there still: right
	d2.stop()
	if !strings.Contains(d2.stderr.String(), mnt+" is already a draftfs mount") {
		t.Errorf("a mount over a draftfs mount: stderr %q; want a warning", d2.stderr)
	}
	d.stop()
	if !strings.Contains(d.stderr.String(), mnt+" is not empty (mine.txt)") {
		t.Errorf("a mount over a non-empty directory: stderr %q; want a warning", d.stderr)
	}

	d = f.serve("")
	if !strings.Contains(d.ready, "the draft holds 1 change from before") {
		t.Errorf("ready line %q; want the change from before mentioned", d.ready)
	}
}
