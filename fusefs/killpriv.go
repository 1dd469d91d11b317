//go:build linux

package fusefs

import (
	"context"
	"io/fs"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/draftfs/draftfs/overlay"
)

// The mount has FUSE's HANDLE_KILLPRIV_V2: the kernel leaves clearing
// set-id bits to the server ([overlay.KillPriv]), which spares a GETATTR
// before every chown.

// killPriv is overlay.KillPriv for the caller the kernel names.
func killPriv(fi fs.FileInfo, c *fuse.Caller) (fs.FileMode, bool) {
	return overlay.KillPriv(fi, overlay.Caller{Uid: c.Uid, Gid: c.Gid, Pid: c.Pid})
}

// killPrivAfterWrite clears the file's set-id bits after a write by a
// caller without CAP_FSETID, and drops the kernel's copy of its mode
// (a WRITE reply carries no attributes).
func (n *node) killPrivAfterWrite(ctx context.Context) syscall.Errno {
	key, ok := n.key()
	c, known := fuse.FromContext(ctx)
	if !ok || !known {
		return 0 // unlinked: nobody can execute it by name any more
	}
	fi, err := n.srv.fsys.Lstat(key)
	if err != nil {
		return n.srv.errno("write", err)
	}
	mode, kill := killPriv(fi, c)
	if !kill {
		return 0
	}
	if err := n.srv.as(ctx).Setattr(key, overlay.Attrs{Mode: &mode}); err != nil {
		return n.srv.errno("write", err)
	}
	n.NotifyContent(-1, 0) // attributes only
	return 0
}
