//go:build linux

// Package daemon is the draftfs daemon of one workspace: it owns the
// workspace's state (the engine), answers the control socket and serves
// the merged view of drafts as FUSE mounts.
//
// [Start] takes the workspace's daemon lock (a second daemon for the same
// workspace is refused with [ErrRunning], naming the one that runs),
// opens the engine, listens on the control socket (replacing a stale one)
// and mounts the view when asked. `draftfs serve` runs one until a
// signal; `draftfs run`, `acp` and `mcp` start one in their own process
// when none runs, so that other commands and editors can still reach the
// workspace through its socket.
//
// # Mounts
//
// A daemon mounts the view of its draft where Options.Mount says, and of
// any draft on request (draft/mount, `draftfs run`) under the state
// directory's mnt/DRAFT. A mount point left by a daemon that was killed
// (its FUSE connection gone) is unmounted before it is used again. When
// the Options.Mount mount is unmounted from outside (`draftfs unmount`),
// [Daemon.Done] is closed: the daemon has lost its reason to run.
//
// # Locking
//
// Daemon.mu protects the set of mounts. The daemon lock is an flock(2) on
// STATE/daemon.lock, held for the daemon's life and released by the
// kernel when it dies, so a crashed daemon never blocks the next one.
package daemon
