//go:build linux

package daemon

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// children are the pids of pid's children.
func children(t *testing.T, pid int) []int {
	t.Helper()
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

func start(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	c := exec.Command(args[0], args[1:]...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c
}

// TestAuthors: the processes a registered run starts, and theirs, are by
// the run's command; others by their own command line; a process is
// read from /proc once, and forgotten once it exited.
func TestAuthors(t *testing.T) {
	a := newAuthors()
	defer a.close()
	end := a.run(os.Getpid(), []string{"/usr/local/bin/claude", "--resume"})
	sh := start(t, "sh", "-c", "sleep 30 & wait")
	var sleep int
	for deadline := time.Now().Add(10 * time.Second); sleep == 0; {
		if c := children(t, sh.Process.Pid); len(c) > 0 {
			sleep = c[0]
		} else if time.Now().After(deadline) {
			t.Fatal("sh started no sleep")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The child first, so that the grandchild finds its parent known.
	for _, pid := range []int{sleep, sh.Process.Pid} {
		if got := a.of(uint32(pid)); got != "claude --resume" {
			t.Errorf("pid %d is by %q, want the run's command", pid, got)
		}
	}
	end()

	plain := start(t, "sleep", "31")
	if got := a.of(uint32(plain.Process.Pid)); got != "sleep 31" {
		t.Errorf("a process outside any run is by %q, want its command line", got)
	}
	// Known now: the answer comes from the cache, not /proc, so it holds
	// while the process lives...
	a.mu.Lock()
	a.procs[plain.Process.Pid].who = "cached"
	a.mu.Unlock()
	if got := a.of(uint32(plain.Process.Pid)); got != "cached" {
		t.Errorf("a known process is by %q, want the cached answer", got)
	}
	// ...and no longer once it exited and the recheck interval passed:
	// its pid may be another's now.
	plain.Process.Kill()
	plain.Wait()
	time.Sleep(a.recheck)
	if got := a.of(uint32(plain.Process.Pid)); got == "cached" {
		t.Errorf("an exited process's pid is still by its old author")
	}
	a.mu.Lock()
	_, kept := a.procs[plain.Process.Pid]
	a.mu.Unlock()
	if kept {
		t.Errorf("an exited process is still known")
	}
}

func TestCommandLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"/usr/bin/sh", "-c", "make test"}, "sh -c make test"},
		{[]string{"claude"}, "claude"},
		{nil, ""},
		{[]string{"x", strings.Repeat("é", 80)}, "x " + strings.Repeat("é", 47) + "..."},
	} {
		if got := CommandLine(c.args); got != c.want {
			t.Errorf("CommandLine(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// BenchmarkAuthorOf is the cost of naming a known process: what each
// request through the mount pays after the process's first.
func BenchmarkAuthorOf(b *testing.B) {
	a := newAuthors()
	defer a.close()
	pid := uint32(os.Getpid())
	if a.of(pid) == "" {
		b.Fatal("this process is by no one")
	}
	b.ReportAllocs()
	for b.Loop() {
		a.of(pid)
	}
}

// TestAuthorsPollOncePerInterval: a known process's pidfd is polled at
// most once per recheck interval, not at every request.
func TestAuthorsPollOncePerInterval(t *testing.T) {
	a := newAuthors()
	defer a.close()
	pid := uint32(os.Getpid())
	want := a.of(pid)
	if want == "" {
		t.Fatal("the test process has no author")
	}
	a.recheck = time.Hour
	for range 100 {
		if got := a.of(pid); got != want {
			t.Fatalf("by %q, then %q", want, got)
		}
	}
	if n := a.polls.Load(); n != 0 {
		t.Errorf("100 lookups within the interval polled %d times, want none", n)
	}
	a.recheck = 0
	for range 100 {
		a.of(pid)
	}
	if n := a.polls.Load(); n != 100 {
		t.Errorf("100 lookups past the interval polled %d times, want 100", n)
	}
}

// BenchmarkAuthorsOf: the cost of naming the process behind a request,
// once it is known, with the pidfd polled at every request ("every") and
// once per recheck interval ("interval", the default).
func BenchmarkAuthorsOf(b *testing.B) {
	for _, c := range []struct {
		name    string
		recheck time.Duration
	}{{"every", 0}, {"interval", recheckAfter}} {
		b.Run(c.name, func(b *testing.B) {
			a := newAuthors()
			defer a.close()
			a.recheck = c.recheck
			pid := uint32(os.Getpid())
			a.of(pid)
			for b.Loop() {
				a.of(pid)
			}
		})
	}
}
