//go:build linux

// Package passthrough keeps the kernel's rules for FUSE passthrough
// (Linux 6.9+, CAP_SYS_ADMIN) for a server that serves opens: which
// opens of a node the kernel may read straight from a backing file,
// and the counts that choice needs. It is FUSE-specific, so it is not
// the engine's, but it translates no request either: package fusefs
// asks it at each OPEN and RELEASE.
//
// The kernel gives an inode one backing file at a time, and while it
// has one, every open of the inode must use it: an open through the
// server then fails (EIO). Writes must reach the engine, not the disk
// file or behind the engine's back, and the path may hold another file
// by now (a copy-up, a buffer push). So a node counts its open files by
// how the kernel does their I/O, and each open takes:
//   - passthrough: read-only, the path holds an OS file, no open of the
//     node is cached, and the node has no other backing file;
//   - cached (FOPEN_KEEP_CACHE, as in the default mode) when no open
//     of the node uses passthrough;
//   - otherwise the open is answered ESTALE: the kernel looks the path
//     up again from the same thread and retries, and that lookup gives
//     a fresh node (a new generation; see [Retries]), whatever object
//     the path holds by then. Nodes of a replaced generation never use
//     passthrough, so the retry always succeeds; descriptors open on
//     the old node keep reading what they had open.
//
// The counts go down only once the server finished a RELEASE, after the
// kernel dropped the file, so they never undercount. The backing file is
// registered and unregistered here rather than by go-fuse, which would
// reuse a node's backing file for a later open even if the path holds
// another file by then.
//
// # Locking
//
// Node.mu protects a node's counts, and is held while registering or
// closing its backing file (an ioctl on the FUSE device, not a
// notification). Retries.mu is taken inside any other lock.
package passthrough

import (
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Kernel registers backing files: go-fuse's *fuse.Server.
type Kernel interface {
	RegisterBackingFd(*fuse.BackingMap) (int32, syscall.Errno)
	UnregisterBackingFd(id int32) syscall.Errno
}

// Mount is a mount's passthrough state.
type Mount struct {
	Kernel Kernel               // set before the first open, then read only
	Logf   func(string, ...any) // read only
	state  atomic.Int32         // untried, on or off
}

// States of a mount (Mount.state).
const (
	untried int32 = iota // no backing file registered yet
	on                   // the kernel took one
	off                  // the kernel refused one: no more tries
)

// Node is a node's count of open files by I/O mode.
type Node struct {
	mu      sync.Mutex // protects the following
	cached  int        // open in cached mode
	through int        // open with passthrough, all on backing
	backing int32      // the registered backing file while through > 0
	file    fileID     // what backing is
}

// fileID names an OS file.
type fileID struct{ dev, ino uint64 }

// Open decides how an open of nd is served and counts it: f is the OS
// file holding the node's content (nil: none, or a write), replaced
// says the node is of a replaced generation. It returns the kernel's
// backing id for a passthrough open (0: cached) and the open's flags.
// When the open clashes with one using passthrough, stale runs (with
// nd's lock held) and the open is answered ESTALE. ENOSYS when the
// kernel does not take backing files from this server: declining the
// open puts the mount in the default mode (no_open) from then on.
func (m *Mount) Open(nd *Node, f *os.File, replaced bool, stale func()) (backing int32, flags uint32, errno syscall.Errno) {
	flags = fuse.FOPEN_NOFLUSH
	nd.mu.Lock()
	defer nd.mu.Unlock()
	through, errno := m.useBacking(nd, f, replaced)
	switch {
	case errno != 0:
		return 0, 0, errno
	case through:
		nd.through++
		return nd.backing, flags | fuse.FOPEN_PASSTHROUGH, 0
	case nd.through > 0:
		stale()
		return 0, 0, syscall.ESTALE
	}
	nd.cached++
	return 0, flags | fuse.FOPEN_KEEP_CACHE, 0
}

// useBacking reports whether an open of nd can be served by passthrough
// on f (nil: not an OS file), registering f with the kernel when nd has
// no backing file yet. Not when nd has cached opens or another backing
// file, or is of a replaced generation. ENOSYS when the kernel refuses
// the first backing file of the mount (see Open); a later refusal turns
// passthrough off. nd.mu is held.
func (m *Mount) useBacking(nd *Node, f *os.File, replaced bool) (bool, syscall.Errno) {
	if f == nil || nd.cached > 0 || m.state.Load() == off || replaced {
		return false, 0
	}
	var sys syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &sys); err != nil {
		return false, 0
	}
	id := fileID{dev: sys.Dev, ino: sys.Ino}
	if nd.through > 0 {
		return nd.file == id, 0
	}
	bid, errno := m.Kernel.RegisterBackingFd(&fuse.BackingMap{Fd: int32(f.Fd())})
	if errno == 0 {
		m.state.CompareAndSwap(untried, on)
		nd.backing, nd.file = bid, id
		return true, 0
	}
	if m.state.Swap(off) == untried {
		m.Logf("fusefs: passthrough unavailable (%v; it needs Linux 6.9 or later, CAP_SYS_ADMIN and a workspace not on a stacked file system such as overlayfs): serving without it, as by default", errno)
		return false, syscall.ENOSYS
	}
	m.Logf("fusefs: passthrough of %s refused (%v): reading files through the server from now on", f.Name(), errno)
	return false, 0
}

// Release counts an open of nd closed by the kernel, backing the id
// Open gave it.
func (m *Mount) Release(nd *Node, backing int32) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if backing == 0 {
		nd.cached--
		return
	}
	if nd.through--; nd.through == 0 {
		if errno := m.Kernel.UnregisterBackingFd(backing); errno != 0 {
			m.Logf("fusefs: closing a passthrough backing file: %v", errno)
		}
		nd.backing = 0
	}
}

// Retries are the opens answered ESTALE that the kernel is retrying:
// its retry looks the path up anew from the same thread (LOOKUP, or
// CREATE for O_CREAT when the lookup finds nothing), and that lookup
// must give a fresh node.
type Retries struct {
	mu sync.Mutex // protects m
	m  map[retry]struct{}
}

// retry names an open the kernel is retrying: the calling thread and
// the path.
type retry struct {
	pid uint32
	key string
}

// maxRetrying bounds Retries.
const maxRetrying = 1024

// Mark records that thread pid will retry an open of key.
func (r *Retries) Mark(pid uint32, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) >= maxRetrying {
		// Marks of retries that never came (the caller died): they
		// would only cost their thread passthrough on that path.
		r.m = map[retry]struct{}{}
	}
	r.m[retry{pid, key}] = struct{}{}
}

// Pending reports whether any retry is marked.
func (r *Retries) Pending() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m) > 0
}

// Is reports whether a lookup of key by thread pid is a retry.
func (r *Retries) Is(pid uint32, key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.m[retry{pid, key}]
	return ok
}

// Done ends the retry of an open of key by thread pid, if it is one:
// every lookup of it is done.
func (r *Retries) Done(pid uint32, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, retry{pid, key})
}
