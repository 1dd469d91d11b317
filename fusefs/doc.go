// Package fusefs serves a draft's merged view as a FUSE file system, so
// any tool (a shell, git, a compiler, a CLI agent) works on it as on a
// local disk while every change lands in the draft, and runs commands in
// a private mount namespace where the workspace's own path shows that
// view ([Run]).
//
// It is a thin adapter: every operation is a call on the draft's
// [overlay.Fs] (tagged [overlay.SourceMount]) by the path go-fuse keeps
// for the node. Nodes are not persistent: go-fuse forgets them when the
// kernel does, so memory follows what the kernel keeps referenced, not
// the size of the workspace.
//
// # Identity
//
// A node's inode number is the engine's ([overlay.Attr].Ino): the disk's
// for lower objects, kept across copy-up and rename, the draft's own for
// objects it created. A node also has a generation, bumped when the
// object's content moved to another backing file while the kernel still
// had passthrough opens on the old one (see Passthrough).
//
// # Caching
//
// The kernel keeps entries and attributes for an hour, file pages across
// opens (FOPEN_KEEP_CACHE) and directory listings (FOPEN_CACHE_DIR).
// Changes made through the mount keep those caches right by themselves.
// Changes made elsewhere (an editor buffer push, an ACP or MCP write, a
// commit, a discard, a change on disk) are invalidated two ways:
//
//   - Synchronously, at every open: the kernel sends OPEN (and OPENDIR)
//     for each open(2), so before answering, the node compares a
//     signature of what the path holds now (inode, size, mtime, ctime,
//     mode; for a directory, a hash of its listing) with the one the
//     kernel's cache was filled under, and on a difference tells the
//     kernel to drop the node's attributes and pages (NotifyContent)
//     before the open returns. An open whose node no longer names what
//     the path holds (deleted, replaced, committed under a new inode)
//     fails with ESTALE, which makes the kernel look the path up again
//     and retry once. Negative entries are not cached. So a read through
//     a file opened after a change returned sees that change.
//   - Asynchronously, from the workspace's change feed: attributes,
//     entries and pages of what changed are invalidated as soon as the
//     event is consumed, for stat(2) and for reads through descriptors
//     opened before the change. A feed overflow invalidates every node
//     the kernel holds.
//
// Kernel notifications are never sent while holding a lock that a FUSE
// handler needs (go-fuse documents the deadlock).
//
// # Passthrough
//
// Read-only opens of files backed by an OS file (untouched disk files
// and draft data files) are served by the kernel directly (FUSE
// passthrough) when the kernel allows it for that file system (probed
// once per device), else through the page cache. The kernel gives one
// inode a single backing file and refuses mixing passthrough and cached
// opens, so each node remembers its backing file and its open counts:
// an open that cannot share the node's current mode is answered by
// moving the path to a fresh node (a new generation) and ESTALE, as for
// a replaced file. Writable opens always go through the server, so the
// draft sees and logs every write.
//
// # Errors
//
// Engine errors are *fs.PathError around a syscall.Errno; [errnoOf] maps
// them (and io/fs sentinels) to the errno the kernel gets. Anything else
// is logged and reported as EIO.
//
// # Locking
//
// node.mu protects a node's cache signature and open counts; it is never
// held across an engine call or a kernel notification. handle.mu is an
// RWMutex per open file: operations hold it shared, Release exclusively,
// and later calls get EBADF. Server.mu protects the generation and
// passthrough tables.
package fusefs
