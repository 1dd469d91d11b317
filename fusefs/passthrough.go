//go:build linux

package fusefs

import (
	"context"
	"os"
	"syscall"

	"github.com/draftfs/draftfs/overlay"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/spf13/afero"
)

// Passthrough mode ([Options].Passthrough) keeps OPEN, so that a file
// opened read-only whose content is an OS file (a file untouched on disk
// or a draft file) is read by the kernel straight from that file (FUSE
// passthrough): no request per read and no second copy of the data.
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
//     a fresh node (a new generation), whatever object the path holds
//     by then. Nodes of a replaced generation never use passthrough, so
//     the retry always succeeds; descriptors open on the old node keep
//     reading what they had open.
//
// The counts go down only once go-fuse finished a RELEASE, after the
// kernel dropped the file, so they never undercount. The backing file is
// registered and unregistered here rather than by go-fuse, which would
// reuse a node's backing file for a later open even if the path holds
// another file by then.

// openFile is a file the kernel opened in passthrough mode: the handle
// go-fuse keeps for it, and how to count its release.
type openFile struct {
	n *node // read only
	// backing is the kernel's backing id (never 0) of a file it reads by
	// passthrough; 0 for a cached one. Read only.
	backing int32
}

// fileID names an OS file.
type fileID struct{ dev, ino uint64 }

// ioState is a node's count of open files by I/O mode; node.ioStateMu
// protects it.
type ioState struct {
	cached  int    // open in cached mode
	through int    // open with passthrough, all on backing
	backing int32  // the registered backing file while through > 0
	file    fileID // what backing is
}

// openIO opens n for the kernel in passthrough mode. ENOSYS when the
// kernel does not take backing files from this server: declining the
// open puts the mount in the default mode (no_open) from then on.
func (n *node) openIO(ctx context.Context, write bool) (*openFile, uint32, syscall.Errno) {
	var backing *os.File
	if !write {
		f, errno := n.openRead()
		if errno != 0 {
			return nil, 0, errno
		}
		if f != nil {
			defer f.Close() // the kernel keeps its own reference
			backing, _ = overlay.BackingFile(f)
		}
	}
	h := &openFile{n: n}
	flags := uint32(fuse.FOPEN_NOFLUSH)
	n.srv.retried(ctx, n)
	n.ioStateMu.Lock()
	defer n.ioStateMu.Unlock()
	st := &n.io
	through, errno := n.srv.useBacking(n, st, backing)
	switch {
	case errno != 0:
		return nil, 0, errno
	case through:
		h.backing = st.backing
		st.through++
		flags |= fuse.FOPEN_PASSTHROUGH
	case st.through > 0:
		n.srv.moveAway(ctx, n)
		return nil, 0, syscall.ESTALE
	default:
		st.cached++
		flags |= fuse.FOPEN_KEEP_CACHE
	}
	n.srv.opening.Store(cancelOf(ctx), h)
	return h, flags, 0
}

// openRead opens n's path read-only for an open; nil when n has no path
// of its own any more (then it is pinned, and read through the server).
func (n *node) openRead() (afero.File, syscall.Errno) {
	pinned := n.holdsPin()
	key, ok := n.key()
	if pinned || !ok {
		return nil, 0
	}
	f, err := n.srv.fsys.OpenFile(key, os.O_RDONLY, 0)
	if err != nil {
		return nil, n.openErrno("open", err)
	}
	return f, 0
}

// useBacking reports whether an open of n, whose state is st, can be
// served by passthrough on f (nil: not an OS file), registering f with
// the kernel when n has no backing file yet. Not when n has cached
// opens or another backing file, or is of a replaced generation. ENOSYS
// when the kernel refuses the first backing file of the mount (see
// openIO); a later refusal turns passthrough off.
func (s *Server) useBacking(n *node, st *ioState, f *os.File) (bool, syscall.Errno) {
	if f == nil || st.cached > 0 || s.ptState.Load() == ptOff || n.StableAttr().Gen > 0 {
		return false, 0
	}
	var sys syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &sys); err != nil {
		return false, 0
	}
	id := fileID{dev: sys.Dev, ino: sys.Ino}
	if st.through > 0 {
		return st.file == id, 0
	}
	bid, errno := s.fuse.RegisterBackingFd(&fuse.BackingMap{Fd: int32(f.Fd())})
	if errno == 0 {
		s.ptState.CompareAndSwap(ptUntried, ptOn)
		st.backing, st.file = bid, id
		return true, 0
	}
	if s.ptState.Swap(ptOff) == ptUntried {
		s.logf("fusefs: passthrough unavailable (%v; it needs Linux 6.9 or later, CAP_SYS_ADMIN and a workspace not on a stacked file system such as overlayfs): serving without it, as by default", errno)
		return false, syscall.ENOSYS
	}
	s.logf("fusefs: passthrough of %s refused (%v): reading files through the server from now on", f.Name(), errno)
	return false, 0
}

// Passthrough states of a mount (Server.ptState).
const (
	ptUntried int32 = iota // no backing file registered yet
	ptOn                   // the kernel took one
	ptOff                  // the kernel refused one: no more tries
)

// moveAway makes the kernel's retry of an open of n answered ESTALE
// land on a node that never uses passthrough, and so cannot clash
// again. The retry looks n's path up anew from the same thread (LOOKUP,
// or CREATE for O_CREAT when the lookup finds nothing), and newChild
// gives that thread a node of a replaced generation whatever object the
// path holds by then: a commit may have given it a new inode number in
// between, and a reader may have opened that one by passthrough. Other
// lookups of n's object get a fresh node too (replace), so later opens
// stop joining n's passthrough file.
func (s *Server) moveAway(ctx context.Context, n *node) {
	s.replace(n)
	key, ok := n.key()
	if !ok {
		return // reopened by descriptor: no lookup to retry
	}
	s.mu.Lock()
	if len(s.retrying) >= maxRetrying {
		// Marks of retries that never came (the caller died): they
		// would only cost their thread passthrough on that path.
		clear(s.retrying)
	}
	s.retrying[retry{callerPid(ctx), key}] = struct{}{}
	s.mu.Unlock()
}

// retry names an open the kernel is retrying: the calling thread and
// the path.
type retry struct {
	pid uint32
	key string
}

// maxRetrying bounds Server.retrying.
const maxRetrying = 1024

// retryLookup reports whether a lookup of key is a retry of an open
// answered ESTALE, and must give a fresh node (see moveAway).
// s.mu is held.
func (s *Server) retryLookup(ctx context.Context, key string) bool {
	if len(s.retrying) == 0 {
		return false
	}
	_, ok := s.retrying[retry{callerPid(ctx), key}]
	return ok
}

// retried ends the retry of an open of n, if this open is one: every
// lookup of it is done.
func (s *Server) retried(ctx context.Context, n *node) {
	s.mu.Lock()
	none := len(s.retrying) == 0
	s.mu.Unlock()
	if none {
		return
	}
	if key, ok := n.key(); ok {
		s.mu.Lock()
		delete(s.retrying, retry{callerPid(ctx), key})
		s.mu.Unlock()
	}
}

// callerPid is the thread that made the request.
func callerPid(ctx context.Context) uint32 {
	if c, ok := fuse.FromContext(ctx); ok {
		return c.Pid
	}
	return 0
}

// released counts h's file closed by the kernel.
func (h *openFile) released() {
	n := h.n
	n.ioStateMu.Lock()
	defer n.ioStateMu.Unlock()
	if h.backing == 0 {
		n.io.cached--
		return
	}
	if n.io.through--; n.io.through == 0 {
		if errno := n.srv.fuse.UnregisterBackingFd(h.backing); errno != 0 {
			n.srv.logf("fusefs: closing a passthrough backing file: %v", errno)
		}
		n.io.backing = 0
	}
}

// cancelOf is the request's cancel channel: it names the request while
// it runs, linking a node's open to go-fuse's reply (see rawFS.opened),
// which gets the same channel. go-fuse gives node methods no request
// identity of their own: fuse.Context.Done returns the channel the raw
// layer is handed. An InHeader.Unique in the context (or a BackingID an
// fs.NodeOpener could return per open, where FilePassthroughFder keeps
// one per node) would let this, and the opening and killing maps, go.
func cancelOf(ctx context.Context) <-chan struct{} { return ctx.Done() }

// opened completes the reply to an OPEN or CREATE that a node served in
// passthrough mode, and keeps the file for its release.
func (s *Server) opened(cancel <-chan struct{}, out *fuse.OpenOut) {
	v, ok := s.opening.LoadAndDelete(cancel)
	if !ok {
		return
	}
	h := v.(*openFile)
	out.BackingID = h.backing
	s.files.Store(out.Fh, h)
}
