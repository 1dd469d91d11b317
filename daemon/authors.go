//go:build linux

package daemon

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// authors names the process behind each change made through the
// daemon's mounts (fusefs.Options.Author): a process started, however
// deep, by a `draftfs run` (or the agent of `draftfs acp`) is by the
// command that run started; any other process is by its own command
// line.
//
// A process is looked up in /proc once: the answer is kept with a pidfd
// of the process, and used while that pidfd says the process lives. So
// a pid the kernel gives to a new process after the old one exited is
// looked up afresh, and a process that exited before its lookup is by
// no one ("": the change is the mount's). The pidfd is polled at most
// once per recheck interval: the kernel hands out pids in turn, so a
// pid seen alive is not another process's until every other pid was
// given out (pid_max, at least 32,768), which no machine does in that
// time; the poll was a tenth of the daemon's own work per file tar
// creates.
type authors struct {
	// recheck: how long a process seen alive is taken to still be the
	// one its pid names; read only (tests set it).
	recheck time.Duration
	// polls counts the pidfd polls of processes already known (tests).
	polls atomic.Int64

	mu sync.Mutex // protects the following
	// runs maps the pid of a `draftfs run` (or acp) to the command line
	// it started, held by steps (acp's prompts may overlap).
	runs map[int]*runCmd
	// procs are the processes looked up, by the pid their requests
	// carry (a thread's id for a thread).
	procs map[int]*proc
}

type runCmd struct {
	who   string
	holds int
}

// proc is a process looked up.
type proc struct {
	pidfd int
	// checked: when the pidfd last said the process lives.
	checked time.Time
	// who made its changes; run: it runs under a draftfs run, whose
	// command who is, and so do the processes it starts.
	who string
	run bool
}

const (
	// maxProcs bounds the processes kept; past it, the exited ones go.
	maxProcs = 1024
	// maxDepth bounds the walk up a process's parents.
	maxDepth = 64
	// maxCommand is the longest command line an author is named by.
	maxCommand = 100
	// pidfdThread is PIDFD_THREAD (Linux 6.9): a pidfd of a thread.
	pidfdThread = unix.O_EXCL
	// recheckAfter is authors.recheck by default.
	recheckAfter = 50 * time.Millisecond
)

func newAuthors() *authors {
	return &authors{recheck: recheckAfter, runs: map[int]*runCmd{}, procs: map[int]*proc{}}
}

// of names the process behind a request by pid; "" when unknown.
func (a *authors) of(pid uint32) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p := a.lookupLocked(int(pid), 0); p != nil {
		return p.who
	}
	return ""
}

// run says that the processes pid starts from now on, and theirs, make
// their changes as command, until end.
func (a *authors) run(pid int, command []string) (end func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.runs[pid]
	if r == nil {
		r = &runCmd{}
		a.runs[pid] = r
	}
	r.who = CommandLine(command)
	r.holds++
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			if r.holds--; r.holds == 0 && a.runs[pid] == r {
				delete(a.runs, pid)
			}
		})
	}
}

// lookupLocked returns what is known of the living process pid, nil when
// it is gone or cannot be read. Must be called with a.mu held.
func (a *authors) lookupLocked(pid, depth int) *proc {
	if p := a.procs[pid]; p != nil {
		now := time.Now()
		if now.Sub(p.checked) < a.recheck {
			return p
		}
		a.polls.Add(1)
		if alive(p.pidfd) {
			p.checked = now
			return p
		}
		unix.Close(p.pidfd)
		delete(a.procs, pid)
	}
	if pid <= 1 || depth > maxDepth {
		return nil
	}
	// The pidfd first: if the process still lives after /proc was read,
	// what was read was its own, not that of a process given its pid
	// after it exited.
	fd, err := unix.PidfdOpen(pid, pidfdThread)
	if errors.Is(err, unix.EINVAL) { // a kernel before 6.9: no thread pidfds
		fd, err = unix.PidfdOpen(pid, 0)
	}
	if err != nil {
		return nil
	}
	p := &proc{pidfd: fd}
	ppid, err := parentOf(pid)
	switch {
	case err != nil:
	case a.runs[ppid] != nil:
		p.who, p.run = a.runs[ppid].who, true
	default:
		if pp := a.lookupLocked(ppid, depth+1); pp != nil && pp.run {
			p.who, p.run = pp.who, true
		} else {
			p.who = ownCommand(pid)
		}
	}
	if err != nil || !alive(fd) {
		unix.Close(fd)
		return nil
	}
	p.checked = time.Now()
	if len(a.procs) >= maxProcs {
		a.sweepLocked()
	}
	a.procs[pid] = p
	return p
}

// sweepLocked forgets the processes that exited, and all when none did.
// Must be called with a.mu held.
func (a *authors) sweepLocked() {
	n := len(a.procs)
	for pid, p := range a.procs {
		if !alive(p.pidfd) {
			unix.Close(p.pidfd)
			delete(a.procs, pid)
		}
	}
	if len(a.procs) < n {
		return
	}
	a.closeLocked()
}

// close forgets every process.
func (a *authors) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closeLocked()
}

func (a *authors) closeLocked() {
	for pid, p := range a.procs {
		unix.Close(p.pidfd)
		delete(a.procs, pid)
	}
}

// alive reports whether the process of pidfd has not exited: its pidfd
// polls readable once it has.
func alive(pidfd int) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n == 0
	}
}

// parentOf is the parent pid of process (or thread) pid.
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// PID (COMM) STATE PPID ...: COMM may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("bad stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, errors.New("bad stat")
	}
	return strconv.Atoi(f[1])
}

// ownCommand is the command line of process pid; its name when it has
// none (a kernel thread, a zombie).
func ownCommand(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err == nil && len(b) > 0 {
		return CommandLine(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"))
	}
	b, _ = os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

// CommandLine is how a command is named as an author: the base name of
// its program and its arguments, cut at 100 bytes.
func CommandLine(args []string) string {
	if len(args) == 0 {
		return ""
	}
	s := strings.Join(append([]string{filepath.Base(args[0])}, args[1:]...), " ")
	if len(s) > maxCommand {
		s = strings.ToValidUTF8(s[:maxCommand-3], "") + "..."
	}
	return s
}
