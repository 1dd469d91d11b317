//go:build linux

package overlay

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// The kill tests run the engine in a child process (this test binary
// again, as the worker DRAFTFS_WORKER names), kill it with SIGKILL at a
// step it reaches or at a random moment, reopen the state it left and
// compare the trees with what the test expects.

// workers are the children's bodies: each gets the default draft of the
// workspace the test started it on, and talks to the test in lines on
// stdin and stdout.
var workers = map[string]func(*Draft){
	"crash":    crashWorker,
	"undo":     undoWorker,
	"rewind":   rewindWorker,
	"rollback": rollbackWorker,
}

func TestMain(m *testing.M) {
	if name := os.Getenv("DRAFTFS_WORKER"); name != "" {
		runWorker(workers[name])
		return
	}
	flag.Parse()
	// A benchmark measures captures as they are.
	verifyCaptures = flag.Lookup("test.bench").Value.String() == ""
	os.Exit(m.Run())
}

func runWorker(body func(*Draft)) {
	w, err := Open(Options{Root: os.Getenv("DRAFTFS_WORKER_ROOT"), StateDir: os.Getenv("DRAFTFS_WORKER_STATE")})
	var d *Draft
	if err == nil {
		d, err = w.Draft("")
	}
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	body(d)
}

// worker is a child process running one of workers.
type worker struct {
	t    testing.TB
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
}

// startWorker runs the worker name on the workspace root with its state
// in state; env is added to the child's environment.
func startWorker(t testing.TB, name, root, state string, env ...string) *worker {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DRAFTFS_WORKER="+name, "DRAFTFS_WORKER_ROOT="+root, "DRAFTFS_WORKER_STATE="+state)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	return &worker{t: t, name: name, cmd: cmd, in: in, out: bufio.NewScanner(out)}
}

// send gives the worker a line.
func (w *worker) send(line string) { fmt.Fprintln(w.in, line) }

// line is the worker's next line, "" once it ended.
func (w *worker) line() string {
	if !w.out.Scan() {
		return ""
	}
	return w.out.Text()
}

// expect fails the test unless the worker's next line is want.
func (w *worker) expect(want string) {
	w.t.Helper()
	if got := w.line(); got != want {
		w.t.Fatalf("worker %s: said %q, want %q", w.name, got, want)
	}
}

// wait waits for the worker to end, and says whether SIGKILL ended it
// (err: how else it failed).
func (w *worker) wait() (killed bool, err error) {
	w.in.Close()
	err = w.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL {
		return true, nil
	}
	return false, err
}

// kill ends the worker with SIGKILL, wherever it is.
func (w *worker) kill() {
	w.cmd.Process.Signal(syscall.SIGKILL)
	w.wait()
}

// interrupt runs the work of a worker that says READY, starts on "go"
// and says DONE at the end. With full 0 it lets the work finish and
// returns how long it took; otherwise it kills the worker at a random
// moment within full and returns full.
func (w *worker) interrupt(r *rand.Rand, full time.Duration) time.Duration {
	w.t.Helper()
	w.expect("READY")
	start := time.Now()
	w.send("go")
	if full == 0 {
		w.expect("DONE")
		w.wait()
		return time.Since(start)
	}
	time.Sleep(time.Duration(r.Int63n(int64(full))))
	w.kill()
	return full
}

// reopenAfterKill opens the workspace a worker left, and its default draft; what
// says which round failed.
func reopenAfterKill(t testing.TB, root, state, what string) (*Workspace, *Draft) {
	t.Helper()
	w, err := Open(Options{Root: root, StateDir: state})
	if err != nil {
		t.Fatalf("%s: reopen: %v", what, err)
	}
	d, err := w.Draft("")
	if err != nil {
		w.Close()
		t.Fatalf("%s: reopen the draft: %v", what, err)
	}
	return w, d
}

// onTmpfs puts the test's temporary directories on /dev/shm when there
// is one: fsyncs cost nothing there, and the kills are as real.
func onTmpfs(t *testing.T) {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		t.Setenv("TMPDIR", "/dev/shm")
	}
}

// killSeed seeds a kill test's random moments, logged for a rerun.
func killSeed(t *testing.T) (*rand.Rand, int64) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	return rand.New(rand.NewSource(seed)), seed
}
