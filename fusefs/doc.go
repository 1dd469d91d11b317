// Package fusefs serves a draft's merged view as a FUSE file system, so
// any tool (a shell, git, a compiler, a CLI agent) works on it as on a
// local disk while every change lands in the draft, and runs commands in
// a private mount namespace where the workspace's own path shows that
// view ([Run]).
//
// It is a thin adapter: every operation (user.* extended attributes
// included) is a call on the draft's [overlay.Fs] (tagged
// [overlay.SourceMount]) by the path go-fuse keeps for the node. Nodes are not persistent: go-fuse forgets them when the
// kernel does, so memory follows what the kernel keeps referenced, not
// the size of the workspace (about 0.6 KiB per node).
//
// # Identity
//
// A node's inode number is the engine's ([overlay.Attr].Ino): the disk's
// for lower objects, kept across copy-up and rename, the draft's own for
// objects it created; a commit gives a file the new disk file's. A node
// also has a generation, bumped when its path must move to a fresh node:
// the object moved elsewhere by the engine (its old name may still be in
// the kernel's cache), or its content moved to another backing file
// while the kernel held passthrough opens on the old one.
//
// # Caching
//
// The kernel keeps entries and attributes for an hour, file pages across
// opens (FOPEN_KEEP_CACHE) and directory listings (FOPEN_CACHE_DIR);
// failed lookups are not cached. Changes made through the mount keep
// those caches right by themselves. Changes made elsewhere (an editor
// buffer push, an ACP or MCP write, a commit, a discard, a change on
// disk) are handled two ways:
//
//   - At every open, synchronously: the kernel sends OPEN for each
//     open(2), so before answering, the node checks that its path still
//     names its object and compares a signature of what the path holds
//     (inode, size, mtime, ctime, mode) with the one the kernel's cache
//     was filled under; on a difference it drops the node's attributes
//     and pages (NotifyContent) before the open returns. A node whose
//     path names another object now answers ESTALE, which makes the
//     kernel look the path up again and retry once (known limit: under
//     load, an open racing a commit that replaces the file on disk can
//     meet ESTALE on the retry too and return it, and an O_CREAT open
//     racing a commit has been seen to fail with ENOENT, a bug; both
//     rare, and counted by TestConcurrency). So a read through a
//     file opened after a change returned sees that change. Editor
//     buffers have no file: their opens read the text as of the open,
//     directly (FOPEN_DIRECT_IO), never from the page cache.
//   - From the workspace's change feed, asynchronously: attributes,
//     entries, pages and listings of what changed are dropped as soon as
//     the event is consumed, for stat(2), listings and reads through
//     descriptors opened before the change. A feed overflow drops
//     everything the kernel holds.
//
// A cached listing is trusted at OPENDIR when it was checked before, the
// directory's attributes have not changed since (a change on disk
// changes them) and the feed has no change waiting to be applied;
// otherwise the listing is read and compared at the open, as file
// contents are.
//
// Kernel notifications are never sent while holding a lock that a FUSE
// handler needs (go-fuse documents the deadlock). A node's drops are
// serialised with its opens: a drop landing while a read is under way
// makes the kernel discard the size that read fetched, so an open never
// returns with one still in flight (see node.refresh).
//
// # Passthrough
//
// Opens of files backed by an OS file (untouched disk files, read only;
// draft data files, read and write) are served by the kernel directly
// (FUSE passthrough) when the kernel allows it for that file system
// (probed once per device). The kernel gives an inode a single backing
// file and refuses mixing passthrough with other opens of it, and go-fuse
// registers one backing file per node, so each node remembers its
// backing file and its open counts: an open that cannot share the node's
// current mode moves the path to a fresh node and answers ESTALE, as for
// a replaced file; a node the kernel has just looked up again after an
// ESTALE waits briefly for the other opens to close instead. Draft data
// files are registered read-write so readers and writers share them.
// Where passthrough works, the opens that cannot have it are served
// directly (FOPEN_DIRECT_IO); where it does not, through the page cache.
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
// and later calls get EBADF. Server.mu protects the generation,
// passthrough and open-handle tables; it may be taken with node.mu held,
// never the reverse, and go-fuse's own Inode locks are taken inside it.
// Server.feedMu is held by the feed consumer while it takes changes and
// applies them (kernel notifications included); handlers only ever try
// it (feedIdle), so none waits for it.
package fusefs
