//go:build linux

package serving

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Slack is the timer slack of a serving process's threads.
const Slack = time.Millisecond

// EnvSlack names the environment variable in which a process that
// raised its timer slack keeps the slack it was started with (in
// nanoseconds), for [RestoreSlack]; its presence also says the raise is
// done, so that a process started with it set (to 0: nothing to give
// back) keeps the slack it has.
const EnvSlack = "DRAFTFS_TIMERSLACK"

// Setup prepares the process to serve FUSE requests: one P unless
// GOMAXPROCS is set (a request is a round trip its caller waits for,
// and with more Ps the scheduler hands requests between threads on
// different CPUs, each wake-up of an idle CPU costing more than serving
// a small request), then [RaiseSlack]. Call it before the process does
// anything that must not happen twice.
func Setup() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	RaiseSlack()
}

// RaiseSlack gives every thread of the process a timer slack of at
// least [Slack] (see the package documentation): where the slack is
// less, it execs the process's program again, with the same arguments
// and environment (and EnvSlack), and does not return. If that exec
// fails the process goes on as it was. In a build with cgo the slack
// was raised before the program started, and it does nothing.
func RaiseSlack() {
	if _, ok := os.LookupEnv(EnvSlack); ok {
		return
	}
	// The slack is the calling thread's; exec keeps it for the new
	// program's first thread, from which Go makes all the others.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	was, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || was >= int(Slack) {
		return
	}
	if unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(Slack), 0, 0, 0) != nil {
		return
	}
	env := append(os.Environ(), EnvSlack+"="+strconv.Itoa(was))
	// By its path, so that the process keeps its name (by /proc/self/exe
	// it would be "exe"); that path fails when the program was deleted
	// since it started (and runs its new version when it was replaced),
	// the other does not.
	for _, exe := range programs() {
		syscall.Exec(exe, os.Args, env)
	}
	unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(was), 0, 0, 0)
}

// programs are the paths that exec this process's program again.
func programs() []string {
	if exe, err := os.Executable(); err == nil {
		return []string{exe, "/proc/self/exe"}
	}
	return []string{"/proc/self/exe"}
}

// Start starts cmd, a command the process runs for its user (an ACP
// agent), as RestoreSlack has a command contain's helper execs: with
// the timer slack the process was started with, where it raised its
// own, and without EnvSlack. cmd.Env nil is the process's environment.
func Start(cmd *exec.Cmd) error {
	if _, ok := os.LookupEnv(EnvSlack); !ok {
		return cmd.Start()
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	// The child is forked from the calling thread and keeps its slack.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if was, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); err == nil {
		defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(was), 0, 0, 0)
	}
	cmd.Env = RestoreSlack(cmd.Env)
	return cmd.Start()
}

// RestoreSlack is for a process about to exec a command on behalf of a
// serving process: if env says the serving process raised its timer
// slack, it sets the calling thread's back to what that process was
// started with, and returns env without EnvSlack. The caller must hold
// its thread (runtime.LockOSThread) until it execs.
func RestoreSlack(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		v, ok := strings.CutPrefix(kv, EnvSlack+"=")
		if !ok {
			out = append(out, kv)
			continue
		}
		if ns, err := strconv.ParseUint(v, 10, 64); err == nil && ns > 0 {
			unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(ns), 0, 0, 0)
		}
	}
	return out
}
