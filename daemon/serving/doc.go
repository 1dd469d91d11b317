//go:build linux

// Package serving sets up a process that serves FUSE requests: its Go
// code on one CPU at a time, and its threads' timer slack raised so that
// Go's sysmon stops taking the processor from the thread that waits for
// the next request (see [Setup]). The README's Runtime settings section
// has the figures.
//
// # Timer slack
//
// A FUSE server spends most of its time with a thread blocked in a
// read of /dev/fuse (or in io_uring_enter), holding Go's only P. Go's
// sysmon wakes every 20 µs while a P is held so and takes the P back
// once it has seen the same system call twice; with nothing else to
// run, the P then goes idle and sysmon to sleep, and the next request
// has the reader find a P again and wake sysmon, which polls again.
// Between the requests of a busy client (tar, rsync, git) that happens
// at nearly every request, each a sleep, a timer and a wake-up of
// another thread, costly in a VM. The timer slack of a thread (prctl
// PR_SET_TIMERSLACK) lets the kernel end its sleeps up to that much
// later; at [Slack], sysmon sees a request's wait twice only when the
// wait is long, and takes the P after about a millisecond instead of
// 20-70 µs. What waits for the P meanwhile (another goroutine made
// runnable by a request, the network poller when every P is busy)
// waits that much longer.
//
// Go creates sysmon's thread before any of the program's code runs, and
// a process may set the slack only of its own threads (of others with
// CAP_SYS_NICE), which inherit it from the thread that makes them. In a
// build with cgo (the default where a C compiler is found) a C
// constructor sets it on the first thread before Go's runtime starts,
// in every process of a program that links this package (draftfs's
// other commands too, whose timers it may delay by up to [Slack]).
// Without cgo, [RaiseSlack] sets its thread's slack and execs the
// program again, whose threads all inherit it; that exec made a mount's
// start about 10 ms slower, and the cgo build links externally, which
// starts the binary sooner too (the README has the figures). Either way
// the slack the process had travels in the environment ([EnvSlack]),
// and [RestoreSlack] gives it back to the commands the process starts
// (draftfs run's and draftfs acp's, through contain's helper; [Start]
// for an ACP agent started inside draftfs run, without the helper), so
// that a command runs as it would without draftfs.
package serving
