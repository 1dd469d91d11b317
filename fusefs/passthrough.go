//go:build linux

package fusefs

import (
	"context"
	"os"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/overlay"
)

// Passthrough mode ([Options].Passthrough) keeps OPEN, so that a file
// opened read-only whose content is an OS file (a file untouched on disk
// or a draft file) is read by the kernel straight from that file (FUSE
// passthrough): no request per read and no second copy of the data.
// Package passthrough decides how each open is served; an open that
// would clash is answered ESTALE, and moveAway makes the kernel's retry
// land on a fresh node.

// openFile is a file the kernel opened in passthrough mode: the handle
// go-fuse keeps for it, and how to count its release.
type openFile struct {
	n *node // read only
	// backing is the kernel's backing id (never 0) of a file it reads by
	// passthrough; 0 for a cached one. Read only.
	backing int32
}

// openIO opens n for the kernel in passthrough mode (see
// passthrough.Mount.Open).
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
	n.srv.retried(ctx, n)
	id, flags, errno := n.srv.pt.Open(&n.rareFields().io, backing, n.StableAttr().Gen > 0, func() { n.srv.moveAway(ctx, n) })
	if errno != 0 {
		return nil, 0, errno
	}
	h := &openFile{n: n, backing: id}
	n.srv.opening.Store(cancelOf(ctx), h)
	return h, flags, 0
}

// openRead opens n's path read-only for an open; nil when n has no path
// of its own any more (then it is pinned, and read through the server).
func (n *node) openRead() (afero.File, syscall.Errno) {
	pinned := n.Slot().Holds()
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

// moveAway makes the kernel's retry of an open of n answered ESTALE
// land on a node that never uses passthrough, and so cannot clash
// again. newChild gives the retrying thread a node of a replaced
// generation whatever object the path holds by then: a commit may have
// given it a new inode number in between, and a reader may have opened
// that one by passthrough. Other lookups of n's object get a fresh node
// too (nodes.Table.Replace), so later opens stop joining n's passthrough file.
func (s *Server) moveAway(ctx context.Context, n *node) {
	s.nodes.Replace(n.StableAttr())
	if key, ok := n.key(); ok { // else reopened by descriptor: no lookup to retry
		s.retrying.Mark(callerPid(ctx), key)
	}
}

// retried ends the retry of an open of n, if this open is one.
func (s *Server) retried(ctx context.Context, n *node) {
	if !s.retrying.Pending() {
		return
	}
	if key, ok := n.key(); ok {
		s.retrying.Done(callerPid(ctx), key)
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
func (h *openFile) released() { h.n.srv.pt.Release(&h.n.rareFields().io, h.backing) }

// cancelOf is the request's cancel channel: it names the request while
// it runs, linking a node's open to go-fuse's reply (see rawFS.opened),
// which gets the same channel. go-fuse gives node methods no request
// identity of their own: fuse.Context.Done returns the channel the raw
// layer is handed. An InHeader.Unique in the context (or a BackingID an
// fs.NodeOpener could return per open, where FilePassthroughFder keeps
// one per node) would let this, and the opening and writing maps, go.
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
