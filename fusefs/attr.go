//go:build linux

package fusefs

import (
	"context"
	"errors"
	"io/fs"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/fusefs/internal/nodes"
	"github.com/draftfs/draftfs/fusefs/internal/pins"
	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/beneath"
)

// Attributes: getattr and setattr, and the kernel's view of an engine
// info.

// Getattr implements NodeGetattrer. A node whose path no longer names it
// (unlinked while open, say) is described through its open handle.
func (n *node) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	_, fi, errno := n.current()
	if errno != 0 {
		err := n.Slot().Use(func(f afero.File) (err error) {
			fi, err = f.Stat()
			return err
		})
		if err != nil {
			if fi = n.Slot().Gone(); fi == nil {
				return errno
			}
		}
	}
	n.srv.fill(&out.Attr, fi)
	out.Ino = n.StableAttr().Ino // the path may hold a replacement (see current)
	return 0
}

// Setattr implements NodeSetattrer: chmod, chown, utimens and truncate.
func (n *node) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	var a overlay.Attrs
	if m, ok := in.GetMode(); ok {
		mode := fileMode(m)
		a.Mode = &mode
	}
	if u, ok := in.GetUID(); ok {
		uid := int(u)
		a.Uid = &uid
	}
	if g, ok := in.GetGID(); ok {
		gid := int(g)
		a.Gid = &gid
	}
	if sz, ok := in.GetSize(); ok {
		size := int64(sz)
		a.Size = &size
	}
	if t, ok := in.GetATime(); ok {
		a.Atime = &t
	}
	if t, ok := in.GetMTime(); ok {
		a.Mtime = &t
	}
	// Only the type, mode and owner of cur are read, unless nothing
	// is asked.
	key, cur, errno := n.currentBy(n.srv.fsys.LstatMeta)
	if errno != 0 {
		// Only ftruncate of an unlinked open file can still be served.
		if a.Size == nil || a.Mode != nil || a.Uid != nil || a.Gid != nil || a.Atime != nil || a.Mtime != nil {
			return errno
		}
		var fi fs.FileInfo
		err := n.Slot().Use(func(f afero.File) (err error) {
			if err = f.Truncate(*a.Size); err == nil {
				fi, err = f.Stat()
			}
			return err
		})
		if errors.Is(err, pins.ErrNotPinned) {
			return errno
		}
		if err != nil {
			return n.srv.errno("ftruncate", err)
		}
		n.srv.fill(&out.Attr, fi)
		return 0
	}

	chown := a.Uid != nil || a.Gid != nil
	if a.Mode == nil && !cur.IsDir() && (chown || in.Valid&fuse.FATTR_KILL_SUIDGID != 0) {
		if mode, kill := killPriv(cur, &in.Caller); kill {
			a.Mode = &mode
		}
	}
	if a == (overlay.Attrs{}) { // nothing asked
		return n.Getattr(ctx, f, out)
	}
	fi, err := n.srv.as(ctx).SetattrStat(key, a)
	if err != nil {
		return n.srv.errno("setattr", err)
	}
	n.srv.fill(&out.Attr, fi)
	n.changedBehind()
	return 0
}

// fill sets out from fi.
func (s *Server) fill(out *fuse.Attr, fi fs.FileInfo) {
	out.Ino = nodes.Ino(fi)
	out.Size = uint64(fi.Size())
	out.Mode = beneath.UnixMode(fi.Mode())
	out.Blksize = 4096
	mtime := fi.ModTime()
	atime, ctime := mtime, mtime
	if a, ok := fi.Sys().(*overlay.Attr); ok {
		out.Nlink = a.Nlink
		out.Uid, out.Gid = a.Uid, a.Gid
		out.Rdev = uint32(a.Rdev)
		out.Blocks = uint64(a.Blocks)
		atime, ctime = a.Atime, a.Ctime
	}
	if out.Blocks == 0 {
		out.Blocks = (out.Size + 511) / 512
	}
	out.SetTimes(&atime, &mtime, &ctime)
}

// fileMode is the permission bits of a mode from the kernel.
func fileMode(mode uint32) fs.FileMode { return beneath.FileMode(mode & 0o7777) }
