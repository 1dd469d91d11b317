package main

import (
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/daemon/serving"
)

// TestServingTimerSlack: a process that serves a mount runs every
// thread, Go's sysmon among them, with a timer slack of at least
// serving.Slack, and the commands draftfs run starts get the slack
// draftfs was started with back, without the variable that carried it.
// Set to 0 before draftfs starts, the variable leaves the slack as it
// is. Built with cgo (the default here) draftfs raises the slack before
// Go starts and never execs itself; built without, it execs itself
// again for that, under its own name.
func TestServingTimerSlack(t *testing.T) {
	nocgo := filepath.Join(filepath.Dir(bin), "draftfs-nocgo")
	build := exec.Command("go", "build", "-o", nocgo, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build draftfs without cgo: %v\n%s", err, out)
	}
	for _, exe := range []string{bin, nocgo} {
		info, err := buildinfo.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		early := slices.Contains(info.Settings, debug.BuildSetting{Key: "CGO_ENABLED", Value: "1"})
		t.Run(filepath.Base(exe), func(t *testing.T) {
			whoever(t, func(t *testing.T, f *fixture) {
				f.exe = exe
				servingTimerSlack(t, f, early)
			})
		})
	}
}

// servingTimerSlack is TestServingTimerSlack for f's binary, which
// raises the slack before Go starts if early, else by an exec.
func servingTimerSlack(t *testing.T, f *fixture, early bool) {
	needFUSE(t)
	const started = 60_000 // not the kernel's default, below Slack
	probe := []string{"run", "--", "sh", "-c", `cat /proc/self/timerslack_ns; echo "${` + serving.EnvSlack + `-unset}"`}
	want := strconv.Itoa(started) + "\nunset\n"

	// Without a daemon: the run serves its mount itself.
	if r := withSlack(t, started, func() result { return f.run(probe...) }); r.code != 0 || r.out != want {
		t.Fatalf("run serving its own mount, started with slack %d: %s; want stdout %q", started, r, want)
	}
	// An ACP agent that draftfs acp starts inside draftfs run, itself
	// and not through contain's helper, gets it back too.
	agent := []string{"run", "--", f.exe, "acp", "--", "sh", "-c", `cat /proc/self/timerslack_ns >&2; echo "${` + serving.EnvSlack + `-unset}" >&2`}
	if r := withSlack(t, started, func() result { return f.run(agent...) }); !strings.Contains(r.err, want) {
		t.Fatalf("an ACP agent inside run, started with slack %d: %s; want %q on stderr", started, r, want)
	}

	mnt := filepath.Join(f.tmp, "view")
	d := withSlack(t, started, func() *server { return f.serve(mnt) })
	pid := d.cmd.Process.Pid
	if slacks := threadSlacks(t, pid); len(slacks) < 2 || slices.ContainsFunc(slacks, func(ns int) bool { return ns != int(serving.Slack) }) {
		t.Errorf("the daemon's threads' timer slacks: %v; want all %d", slacks, serving.Slack)
	}
	if execed := execedSelf(pid); execed == early {
		t.Errorf("the daemon execed itself: %v; want %v", execed, !early)
	}
	if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); strings.TrimSpace(string(comm)) != filepath.Base(f.exe) {
		t.Errorf("the daemon's name: %q; want %q", comm, filepath.Base(f.exe))
	}
	// Through the daemon.
	if r := withSlack(t, started, func() result { return f.run(probe...) }); r.code != 0 || r.out != want {
		t.Fatalf("run through the daemon, started with slack %d: %s; want stdout %q", started, r, want)
	}
	d.stop()

	// Started with more slack than Slack: nothing is changed.
	const more = 3 * int(serving.Slack)
	d = withSlack(t, more, func() *server { return f.serve(mnt) })
	if slacks := threadSlacks(t, d.cmd.Process.Pid); slices.ContainsFunc(slacks, func(ns int) bool { return ns != more }) {
		t.Errorf("the daemon's threads' timer slacks when started with %d: %v", more, slacks)
	}
	if execedSelf(d.cmd.Process.Pid) {
		t.Errorf("the daemon started with slack %d execed itself", more)
	}
	if r := withSlack(t, more, func() result { return f.run(probe...) }); r.code != 0 || r.out != strconv.Itoa(more)+"\nunset\n" {
		t.Fatalf("run through the daemon, started with slack %d: %s", more, r)
	}
	d.stop()

	// The variable set, to 0, leaves the slack as it is.
	t.Setenv(serving.EnvSlack, "0")
	d = withSlack(t, started, func() *server { return f.serve(mnt) })
	if slacks := threadSlacks(t, d.cmd.Process.Pid); slices.ContainsFunc(slacks, func(ns int) bool { return ns != started }) {
		t.Errorf("the daemon's threads' timer slacks with %s=0: %v; want all %d", serving.EnvSlack, slacks, started)
	}
	d.stop()
}

// execedSelf says whether process pid, started without
// serving.EnvSlack, execed itself to raise its slack: its environment
// as exec gave it then has the variable.
func execedSelf(pid int) bool {
	env, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return strings.Contains(string(env), serving.EnvSlack+"=")
}

// withSlack calls start, which starts a process, on a thread whose
// timer slack is ns: the process inherits it.
func withSlack[T any](t *testing.T, ns int, start func() T) T {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	was, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(ns), 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(was), 0, 0, 0)
	return start()
}

// threadSlacks are the timer slacks of process pid's threads.
func threadSlacks(t *testing.T, pid int) []int {
	t.Helper()
	tids, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, tid := range tids {
		b, err := os.ReadFile("/proc/" + tid.Name() + "/timerslack_ns")
		if err != nil {
			continue // gone meanwhile
		}
		ns, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("/proc/%s/timerslack_ns: %q", tid.Name(), b)
		}
		out = append(out, ns)
	}
	return out
}
