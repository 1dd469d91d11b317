//go:build linux

// Package contain runs a command inside a draft: in private namespaces,
// built by bubblewrap (bwrap), where the workspace's own path shows the
// draft's merged view (a draftfs mount) and cannot be uncovered.
//
// # What the namespace guarantees
//
//   - The workspace's path is a bind of the view. The command has no
//     capabilities and lives in a user namespace of its own, so the
//     mounts it inherits are locked: it cannot unmount the view, mount
//     over it, or bind the directory under it elsewhere, and a nested
//     user namespace it makes does not change that.
//   - It has a PID namespace and a /proc of its own: no host process,
//     so no /proc/PID/root path leads around the view.
//   - The state root (every draft's files and the real control sockets)
//     is hidden behind an empty tmpfs: the command cannot open a draft's
//     state or reach a daemon's full control socket. Spec.Binds puts
//     back what it may use (the daemon's agent socket, which refuses the
//     review commands).
//
// The rest of the file system and the network are shared with the
// host, as the user's own: this is containment of the workspace, not a
// sandbox.
//
// # Why bubblewrap
//
// bwrap is the namespace builder that Flatpak, Claude Code's sandbox
// runtime and Codex's Linux sandbox use: it is small, audited, packaged
// everywhere, and handles the order of operations (user namespace,
// mount propagation, pivot_root, capability drop, no_new_privs, PID 1
// reaping) that hand-written namespace code gets subtly wrong.
//
// # Signals and the terminal
//
// With a terminal the command stays in the caller's session and process
// group, so Ctrl-C and job control reach it as they would without
// draftfs; bwrap itself is started with SIGINT and SIGQUIT ignored (it
// would otherwise die of Ctrl-C and take the command with it through
// --die-with-parent), and the helper that execs the command inside
// restores them. Without a terminal the command gets a session of its
// own (--new-session), so it cannot push input into a terminal.
package contain
