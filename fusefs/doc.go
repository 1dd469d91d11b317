//go:build linux

// Package fusefs serves a draft's merged view as a FUSE file system, so
// any tool (a shell, git, a compiler, a CLI agent) works on it as on a
// local disk while every change lands in the draft. Finding and
// unmounting draftfs mounts is package daemon/mounts.
//
// It is a thin adapter: every operation (user.* extended attributes
// included) is a call on the draft's [overlay.Fs] (tagged
// [overlay.SourceMount], and by the process behind the request when
// [Options].Author names it) by the path go-fuse keeps for the node. Nodes
// are not persistent: go-fuse forgets them when the kernel does, so
// memory follows what the kernel keeps referenced, not the size of the
// workspace (about 0.6 KiB per node).
//
// # Identity
//
// A node's inode number is the engine's ([overlay.Attr].Ino): the disk's
// for lower objects, kept across copy-up and rename, the draft's own for
// objects it created; a commit gives a file the new disk file's. A node
// also has a generation, bumped when its path must move to a fresh node:
// the object moved elsewhere by the engine while its old name may still
// be in the kernel's cache, or (passthrough mode) an open would clash.
// When a lookup gives a node's name to another node of its type (a new
// generation, or the new inode number a commit gives), the old node
// follows it, so descriptors still open on the old one keep working.
// A directory keeps its node, and its kernel entry, while its path
// still holds a directory of the same identity, or one that a commit or
// undo renumbered (a directory the draft made that is now the disk's,
// and back): the kernel unhashes a directory whose entry is dropped even
// where it is a process's working directory, and getcwd there fails.
// Such a directory shows the number it had until the kernel forgets it.
// Package internal/nodes keeps the table of generations, twins and
// followers, and chooses the node a lookup gives.
//
// # Opens
//
// There are none: the first OPEN is answered ENOSYS, after which the
// kernel opens files itself (FUSE's no_open) and keeps their pages
// across opens; FLUSH is declined the same way, and so is CREATE: the
// kernel then makes a new file with MKNOD and opens it itself, so that
// closing it costs no RELEASE. So opening, reading a cached file and
// closing it cost no round trip. Reads, writes, fsync,
// lseek and fallocate come by node and are served by an engine handle
// opened by the node's path for that request alone (the kernel never
// says when a file is closed, and a handle left open for writing would
// keep its file in the draft across a commit). Unlinking or renaming
// over a file through the mount first pins the object: an engine handle
// ([overlay.Fs.Hold]) kept until the kernel forgets the node (package
// internal/pins), so
// descriptors still open on it keep reading and writing what it held;
// the first write through it copies a disk file or an editor's text up
// into the draft, with no name once the name went, as the disk and the
// editor must not see it.
// O_TRUNC reaches the engine as a truncate before the open.
//
// Set-id bits are cleared by the server, not the kernel (FUSE's
// HANDLE_KILLPRIV_V2, which spares a GETATTR before every chown): after
// a write or truncate the kernel flags as made by a caller without
// CAP_FSETID, and on every chown of a non-directory, as Linux does
// (killpriv.go; TestKillPriv compares with a plain directory).
//
// Changes made outside the mount reach open descriptors too: a file
// discarded, committed or pushed from an editor reads as the path holds
// it now, as on a network file system.
//
// # Passthrough mode
//
// With [Options].Passthrough the kernel asks for every open and create,
// and a file opened read-only whose content is an OS file (a file
// untouched on disk, a draft file) is read by the kernel straight from
// it (FUSE passthrough, Linux 6.9+, CAP_SYS_ADMIN): cold reads run at
// disk speed, at the price of a request per open and per close. Every
// other open is served as in the default mode (pages kept across opens,
// reads and writes by node). The kernel allows an inode one backing
// file, and no cached open beside a passthrough one; an open that would
// clash is answered ESTALE, and the kernel's retry looks the path up
// again and gets a fresh node that never uses passthrough (package
// internal/passthrough says how). The old node and the fresh one are
// twins, nodes of one object: a change through one drops what the kernel
// caches for the other, and unlinking the object's last name pins it for
// both. A descriptor opened by passthrough keeps the file it opened when
// the path changes (a copy-up, a discard, a buffer push): new opens see
// the change, as on a local disk whose file was replaced by a rename.
// Where the kernel refuses the first backing file, the mount logs why
// and falls back to the default mode.
//
// # Caching
//
// The kernel keeps entries, failed lookups and attributes for an hour,
// file pages across opens and directory listings (FOPEN_CACHE_DIR).
// Changes made through the mount keep those caches right by themselves.
// Changes made elsewhere (an editor buffer push, an ACP or MCP write, a
// commit, a discard, a change on disk) reach the server on the
// workspace's change feed, and its consumer drops the attributes, pages,
// entries (failed lookups included) and listings they concern (package
// internal/invalidate decides which).
//
// The feed subscription is followed ([overlay.Workspace.SubscribeFollowed]):
// the control socket answers a request only once every mount applied
// what it changed ([overlay.Workspace.Settle]), so a read through the
// mount issued after a push, a write, a commit or a discard returned
// sees it, whatever the cache timeouts. Changes on disk arrive by file
// watching and are applied as they come, a moment later.
//
// Known limit: a read racing such a change (or a truncating rewrite
// through another descriptor) may see a mix of the two versions, the
// kernel's size of one and the bytes of the other, or zeros where a
// truncate was under way (FUSE zero-fills a short read it cannot trust);
// a local disk would show the empty or partial file instead.
//
// Kernel notifications are never sent while holding a lock that a FUSE
// handler needs (go-fuse documents the deadlock): the consumer holds
// none, and the entry notification it sends before a directory's
// content one waits for listings under way, so none read before the
// change is kept.
//
// # Errors
//
// Engine errors are *fs.PathError around a syscall.Errno; [overlay.ErrnoOf] maps
// them (and io/fs sentinels) to the errno the kernel gets. Anything else
// is logged and reported as EIO.
//
// # Locking
//
// node.rare.pin's lock (pins.Slot) protects a node's pinned handle: I/O
// holds it shared, pinning and unpinning exclusively; it is never held
// across a kernel notification, and a goroutine holds one node's at a
// time.
// node.rare.io's lock (passthrough.Node) protects a node's counts of
// open files in passthrough mode, and is held while registering or
// closing its backing file (an ioctl on the FUSE device, not a
// notification). node.rare itself is set once, atomically, under no
// lock. Server.nodes (nodes.Table) locks its generation, node, twin,
// follower and pinned-node tables. go-fuse's Inode.mu is taken inside
// all of them, by its own methods (GetChild, NewInode, Parent).
//
// Server.forgets is held exclusively while go-fuse serves a FORGET
// (which drops nodes and calls their OnForget) and shared while it
// serves a request that gives the kernel nodes (LOOKUP, READDIRPLUS and
// the creates): the table's view of which node go-fuse keeps for an
// identity holds from a lookup's look at the table to go-fuse's choice
// of node (see rawFS.Forget).
//
// Lock order, outermost first: Server.forgets, node.rare.pin's, node.rare.io's, the
// nodes table's, Inode.mu; the retry marks' lock (passthrough.Retries)
// is taken inside any of them. The engine's locks (see package overlay;
// a held handle's included) are taken inside node.rare.pin's and never
// around a call into this package. Which node go-fuse dropped comes
// from OnForget (nodes.Record.Dropped), not from the deprecated
// Inode.Forgotten.
package fusefs
