//go:build linux

// Package overlay is the draftfs engine: the merged view of a workspace,
// draft over editor buffers over disk, and the review workflow that
// commits, discards or undoes what an agent wrote.
//
// A [Workspace] owns the disk layer (an [afero.Fs] rooted at the
// workspace), the editor buffers ([buffers.Set]), the change feed and the
// state directory. Each named [Draft] is an isolated copy-on-write layer
// over the same disk and buffers; [Draft.Fs] gives its merged view as an
// [afero.Fs] tagged with the [Source] that will appear in the log.
//
// # Layers
//
// Reading a path looks at the draft first: an entry there (file,
// directory, symlink or whiteout) wins. Otherwise the path is resolved in
// the lower layers: a dirty editor buffer, else the disk. A draft
// directory may be opaque (nothing below shows through: it was removed and
// created again) or carry an origin, the lower path its lower content
// comes from (a renamed directory, as kernel overlayfs's redirect_dir); a
// renamed file likewise keeps its origin until it is written, so renames
// are O(1) and never EXDEV.
//
// # Identity
//
// Every visible object has a stable inode number: the disk's for lower
// objects, kept across copy-up and rename; allocated from a persistent
// counter above 1<<63 for objects the draft creates. Hard links are two
// draft entries naming one draft inode.
// A copy-up keeps the disk's number and records the disk object's birth
// (statx btime, else its generation): a disk file the disk later gives
// that number to (ext4 recycles them at once) is shown under a number of
// its own (identity.go).
//
// # Persistence
//
// Draft metadata (entries, inodes, the base each path replaced, the log
// and commit journal) is kept in memory and persisted per draft in two
// files; file contents live as plain files under the draft's data
// directory, so writes are plain file I/O and may be passed through by
// the kernel. Every namespace change is appended, before it returns, as
// one checksummed record to a write-ahead log (draft.wal): a single
// write(2), a few microseconds. The log is checkpointed into a bbolt
// database (draft.db) once it holds a few thousand records and the
// draft's changes pause for a moment (at once, in a change, only past
// four times that or 16 MiB: a burst of changes does not wait for it),
// when the draft is closed or opened, and before the database is read
// (log, undo, commit); a checkpoint makes the database durable before the log is
// emptied, and records the last sequence number it holds, so a crash at
// any point replays nothing twice and loses nothing. A killed process
// loses no acknowledged change (the kernel holds written pages; a record
// a crash cut short was never acknowledged and is dropped on replay).
// [Fs] callers that need power-loss durability call Sync on the file,
// which syncs the log too. The database itself runs with NoSync.
//
// A read-only open ([Options].ReadOnly) writes nothing: the log's
// records are kept in memory over the database. A writable open reads
// and checks every state file before it writes: damage other than a
// torn tail of the log is an error naming the file and offset
// ([CheckDraft] says what can be recovered), and bbolt's assertions on a
// damaged page are recovered into errors. When a checkpoint cannot be
// written (a full disk) the records stay in the log, so the draft still
// opens, and a reserve file lets a discard write its record.
//
// A commit, its rollback when an op fails, and an undo are journaled in
// the commit's record before the disk is touched, and finished at the
// next open after a crash (revert.go). Commits older than the last
// [UndoKeep] lose their undo data, and kept contents nothing refers to
// are collected ([Draft.GC]).
//
// # Platform
//
// Linux only, and every file says so with a build constraint: disk paths
// are opened with openat2(RESOLVE_BENEATH) and O_PATH (package beneath),
// draft files are created with O_TMPFILE, and times come from Stat_t.Atim.
// fusefs, daemon and daemon/contain are Linux-only too; buffers and the
// protocol packages' pure parts are not.
//
// # Errors
//
// Operations return *fs.PathError wrapping a [syscall.Errno], so callers
// can both use errors.Is against the io/fs sentinels (fs.ErrNotExist,
// fs.ErrExist, fs.ErrPermission) and errors.As to the exact errno
// (ENOTEMPTY, EXDEV, ENOTDIR, EISDIR, ELOOP). Review operations return
// [ErrConflict], [ErrNothingToUndo], [ErrDiskChanged] and [ErrOutside]
// wrapped with detail.
//
// # Locking
//
// Draft.mu (an RWMutex) protects the draft's in-memory metadata. Readers
// hold it only to resolve a path, never across disk I/O or buffer reads;
// namespace changes hold it for the metadata update and its bbolt
// transaction. Writes to open draft files do not take it. Draft.filesMu,
// taken after Draft.mu, counts the handles open on each inode, so an
// inode whose last name goes while open lives on (unlink while open) and
// a commit keeps in the draft a file still open for writing. Commit,
// discard and undo are serialised by Draft.commitMu, taken before
// Draft.mu. A held handle (Fs.Hold: unlink while open for files of any
// layer) takes its own lock outside Draft.mu. The change feed
// never blocks a publisher holding a lock: each subscriber has a bounded
// queue and a subscriber that falls behind is told it lost events
// (Change.Overflow) and must resynchronise. Commit, discard and undo,
// once they released Draft.mu, hand their changes over in parts that
// the mounts' queues have room for, waiting for them a bounded time. Lock order: Workspace.mu, Draft.commitMu,
// heldFile.mu, Draft.mu, Draft.filesMu.
package overlay
