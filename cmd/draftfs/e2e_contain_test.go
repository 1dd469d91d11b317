package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// needBwrap skips a test of draftfs run when bubblewrap is missing.
func needBwrap(t *testing.T) {
	t.Helper()
	needFUSE(t)
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap (bwrap) is not installed: apt install bubblewrap")
	}
}

// escapes is a script that tries every known way out of the view to the
// disk, each printing whether it worked.
const escapes = `
ws=$PWD
echo X > /proc/$PPID/root$ws/esc-proc.txt 2>/dev/null
for p in $(ls /proc | grep '^[0-9]'); do
  [ -d /proc/$p/root$ws ] && echo X > /proc/$p/root$ws/esc-pid.txt 2>/dev/null
done
umount "$ws" 2>/dev/null && echo "ESCAPED umount"
umount -l "$ws" 2>/dev/null && echo "ESCAPED umount -l"
mount -t tmpfs none "$ws" 2>/dev/null && echo "ESCAPED mount"
unshare -Urm sh -c "umount -l '$ws' && echo X > '$ws/esc-userns.txt' && echo ESCAPED userns" 2>/dev/null
unshare -Urm sh -c "mkdir -p /tmp/esc-$$ && mount --bind '$(dirname "$ws")' /tmp/esc-$$ && echo X > /tmp/esc-$$/$(basename "$ws")/esc-bind.txt && echo ESCAPED bind" 2>/dev/null
ls /proc | grep -c '^[0-9]' | sed 's/^/procs /'
cat ~/.local/state/draftfs/*/drafts/*/* 2>/dev/null | head -c1 | grep -q . && echo "ESCAPED state"
true
`

// TestRunContained: inside draftfs run the known escapes to the disk
// fail, commit and the other review commands are refused with the
// draft intact, and status, diff and log show the draft.
func TestRunContained(t *testing.T) {
	needBwrap(t)
	whoever(t, testRunContained)
}

func testRunContained(t *testing.T, f *fixture) {
	f.file("a.txt", "disk\n")
	before := f.disk("a.txt")
	r := f.run("run", "--", "sh", "-c", "echo draft > a.txt; echo new > new.txt; echo uid $(id -u);"+escapes)
	if r.code != 0 || strings.Contains(r.out, "ESCAPED") {
		t.Fatalf("escapes from draftfs run: %s", r)
	}
	uid := 0
	if f.cred != nil {
		uid = int(f.cred.Uid)
	} else {
		uid = os.Geteuid()
	}
	if !strings.Contains(r.out, fmt.Sprintf("uid %d\n", uid)) {
		t.Errorf("the command did not run as uid %d: %s", uid, r)
	}
	var procs int
	if i := strings.Index(r.out, "procs "); i < 0 {
		t.Errorf("no process count: %s", r)
	} else if fmt.Sscan(r.out[i+len("procs "):], &procs); procs > 8 {
		t.Errorf("the command sees %d processes, the host's too: %s", procs, r)
	}
	entries, _ := os.ReadDir(f.ws)
	if len(entries) != 1 || f.disk("a.txt") != before {
		t.Fatalf("the disk changed: %v, a.txt %q", entries, f.disk("a.txt"))
	}
	st := f.ok("status").out
	if !strings.Contains(st, "M a.txt\n") || !strings.Contains(st, "A new.txt\n") {
		t.Fatalf("status after run: %q", st)
	}

	// Review commands from inside are refused, read-only ones work.
	script := `draftfs status; echo "status=$?"
draftfs diff a.txt | grep '^+draft'; echo "diff=$?"
draftfs log | grep -c . | sed 's/^/log lines /'
draftfs commit; echo "commit=$?"
draftfs commit --force a.txt; echo "commit-path=$?"
draftfs discard --all; echo "discard=$?"
draftfs undo; echo "undo=$?"
echo text | draftfs buffer open a.txt; echo "buffer=$?"
draftfs run -- sh -c 'cat a.txt; pwd'; echo "nested=$?"
`
	path := filepath.Dir(bin) + ":" + os.Getenv("PATH")
	for _, withDaemon := range []bool{false, true} {
		var d *server
		if withDaemon {
			d = f.serve("")
		}
		c := f.cmd("run", "--", "sh", "-c", script)
		c.Env = append(c.Env, "PATH="+path, "XDG_STATE_HOME=")
		out, _ := c.CombinedOutput()
		got := string(out)
		for _, w := range []string{"M a.txt\n", "A new.txt\n", "status=0", "+draft\ndiff=0", "commit=1", "commit-path=1", "discard=1", "undo=1", "buffer=1", "draft\n" + f.ws + "\nnested=0", "belongs to the user"} {
			if !strings.Contains(got, w) {
				t.Errorf("daemon %v: inside draftfs run, want %q in:\n%s", withDaemon, w, got)
			}
		}
		if strings.Contains(got, "log lines 0") {
			t.Errorf("log inside draftfs run is empty:\n%s", got)
		}
		if f.disk("a.txt") != before {
			t.Fatalf("a commit from inside reached the disk: %q", f.disk("a.txt"))
		}
		if st := f.ok("status").out; !strings.Contains(st, "M a.txt\n") || !strings.Contains(st, "A new.txt\n") {
			t.Fatalf("the draft changed after refused review commands: %q", st)
		}
		if d != nil {
			d.stop()
		}
	}
}

// TestRunOutsideWorkspace: draftfs run started outside the workspace
// runs its command at the workspace's root, in the view, and says so.
func TestRunOutsideWorkspace(t *testing.T) {
	needBwrap(t)
	f := newFixture(t)
	f.file("a.txt", "disk\n")
	outside := t.TempDir()
	c := f.cmd("run", "--", "sh", "-c", "pwd; echo x > rel.txt")
	c.Dir = outside
	out, err := c.Output()
	if err != nil {
		t.Fatalf("run from outside: %v", err)
	}
	if string(out) != f.ws+"\n" {
		t.Errorf("run from outside ran in %q, want %s", out, f.ws)
	}
	if _, err := os.Stat(filepath.Join(outside, "rel.txt")); err == nil {
		t.Error("a relative write reached the directory outside")
	}
	if st := f.ok("status").out; st != "A rel.txt\n" {
		t.Errorf("status: %q", st)
	}
}

// TestRunTerminal: on a terminal, draftfs run leaves Ctrl-C to the
// command (it may handle it, or die of it) and passes its exit status
// through.
func TestRunTerminal(t *testing.T) {
	needBwrap(t)
	whoever(t, testRunTerminal)
}

func testRunTerminal(t *testing.T, f *fixture) {
	// The command handles SIGINT, then proves the terminal is its own.
	out, code := f.onTerminal(t, `trap 'echo got-int' INT; echo ready; sleep 20 & wait; tty >/dev/null && echo tty-ok; exit 5`)
	if code != 5 || !strings.Contains(out, "got-int") || !strings.Contains(out, "tty-ok") {
		t.Errorf("Ctrl-C handled by the command: status %d, output %q", code, out)
	}
	// The command dies of it.
	out, code = f.onTerminal(t, `echo ready; exec sleep 20`)
	if code != 128+int(syscall.SIGINT) {
		t.Errorf("Ctrl-C killing the command: status %d, output %q", code, out)
	}
}

// onTerminal runs `draftfs run sh -c script` on a new pseudo-terminal,
// types Ctrl-C once the script printed "ready", and returns what the
// terminal showed and draftfs's exit status.
func (f *fixture) onTerminal(t *testing.T, script string) (string, int) {
	t.Helper()
	master, slave := openPTY(t)
	defer master.Close()
	c := f.cmd("run", "--", "sh", "-c", script)
	c.Stdin, c.Stdout, c.Stderr = slave, slave, slave
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Setsid, c.SysProcAttr.Setctty, c.SysProcAttr.Ctty = true, true, 0
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var out strings.Builder
	buf := make([]byte, 4096)
	typed := false
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		master.SetReadDeadline(time.Now().Add(time.Second))
		n, err := master.Read(buf)
		out.Write(buf[:n])
		if !typed && strings.Contains(out.String(), "ready") {
			time.Sleep(200 * time.Millisecond) // let the script reach its wait
			master.Write([]byte{3})
			typed = true
		}
		if err != nil && !os.IsTimeout(err) {
			break // the terminal closed: everyone left
		}
	}
	err := c.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

// openPTY opens a pseudo-terminal pair.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}
