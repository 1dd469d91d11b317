package uring

import (
	"bytes"
	"syscall"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// RawHandler answers ring requests by calling fs the way go-fuse's
// server does for requests read from /dev/fuse (its opcode.go), built
// on go-fuse's exported types only: so a node tree from fs.NewNodeFS is
// served over the ring without touching its API. go-fuse's own Server
// still mounts, answers INIT (with CapOverIOURing in
// MountOptions.ExtraCapabilities), sends notifications and handles
// what the kernel keeps on /dev/fuse: FORGET, BATCH_FORGET and
// INTERRUPT (until Server.Control takes them over, closing the
// interrupted request's Request.Cancel). What differs from go-fuse's
// server: there is no debug log or latency map, and request extensions
// are dropped (draftfs negotiates none).
//
// go-fuse's experimental ProtocolServer (HandleRequest) would do this
// dispatch, but does not fit the ring: it learns what INIT agreed only
// from an INIT it answers itself, and it cancels a request only on an
// INTERRUPT that comes while it serves it, answering EAGAIN otherwise,
// which the kernel requeues only for requests read from /dev/fuse. An
// interrupt that overtakes its ring request (Server.interrupt keeps
// those) would be lost. A HandleRequest that took the caller's cancel
// channel and the agreed InitIn would let it replace this file.
func RawHandler(fs fuse.RawFileSystem, opts *fuse.MountOptions) Handler {
	b := &bridge{fs: fs, opts: opts}
	return b.serve
}

type bridge struct {
	fs   fuse.RawFileSystem
	opts *fuse.MountOptions
}

// at views the request's header and fixed argument as T (go-fuse's *In
// types embed the header). Request.In has room for any of them.
func at[T any](req *Request) *T { return (*T)(unsafe.Pointer(&req.In[0])) }

// outAt zeroes and returns the reply's fixed part as T.
func outAt[T any](out []byte) (*T, int) {
	n := int(unsafe.Sizeof(*new(T)))
	clear(out[:n])
	return (*T)(unsafe.Pointer(&out[0])), n
}

func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func (b *bridge) serve(req *Request, out []byte) (int, syscall.Errno) {
	h := req.Header()
	payload := req.Payload
	if ext := int(h.TotalExtlen) * 8; ext > 0 {
		if ext > len(payload) {
			return 0, syscall.EIO
		}
		payload = payload[:len(payload)-ext]
	}
	var n int
	var st fuse.Status
	if h.NodeId == pollHackInode || h.NodeId == fuse.FUSE_ROOT_ID && h.Opcode == 1 && cstring(payload) == pollHackName {
		n, st = pollHackAnswer(h, out)
	} else {
		n, st = b.dispatch(req.Cancel, b.fs, h, req, payload, out)
	}
	if st == fuse.OK {
		return n, 0
	}
	if st < 0 {
		// Negative statuses are go-fuse's notification codes, never
		// answers to a request.
		return 0, syscall.EIO
	}
	return 0, syscall.Errno(st)
}

func (b *bridge) dispatch(cancel <-chan struct{}, fs fuse.RawFileSystem, h *fuse.InHeader, req *Request, payload, out []byte) (n int, st fuse.Status) {
	switch h.Opcode {
	case 1: // LOOKUP
		o, n := outAt[fuse.EntryOut](out)
		return n, fs.Lookup(cancel, h, cstring(payload), o)
	case 3: // GETATTR
		o, n := outAt[fuse.AttrOut](out)
		return n, fs.GetAttr(cancel, at[fuse.GetAttrIn](req), o)
	case 4: // SETATTR
		o, n := outAt[fuse.AttrOut](out)
		return n, fs.SetAttr(cancel, at[fuse.SetAttrIn](req), o)
	case 5: // READLINK
		target, st := fs.Readlink(cancel, h)
		if st != fuse.OK {
			return 0, st
		}
		if len(target) > len(out) {
			return 0, fuse.Status(syscall.ENAMETOOLONG)
		}
		return copy(out, target), fuse.OK
	case 6: // SYMLINK: the entry's name, then the target
		name, target, ok := twoNames(payload)
		if !ok {
			return 0, fuse.EIO
		}
		o, n := outAt[fuse.EntryOut](out)
		return n, fs.Symlink(cancel, h, target, name, o)
	case 8: // MKNOD
		o, n := outAt[fuse.EntryOut](out)
		return n, fs.Mknod(cancel, at[fuse.MknodIn](req), cstring(payload), o)
	case 9: // MKDIR
		o, n := outAt[fuse.EntryOut](out)
		return n, fs.Mkdir(cancel, at[fuse.MkdirIn](req), cstring(payload), o)
	case 10: // UNLINK
		return 0, fs.Unlink(cancel, h, cstring(payload))
	case 11: // RMDIR
		return 0, fs.Rmdir(cancel, h, cstring(payload))
	case 12, 45: // RENAME, RENAME2 (RENAME's shorter argument reads flags 0)
		old, new, ok := twoNames(payload)
		if !ok {
			return 0, fuse.EIO
		}
		return 0, fs.Rename(cancel, at[fuse.RenameIn](req), old, new)
	case 13: // LINK
		o, n := outAt[fuse.EntryOut](out)
		return n, fs.Link(cancel, at[fuse.LinkIn](req), cstring(payload), o)
	case 14: // OPEN
		o, n := outAt[fuse.OpenOut](out)
		return n, fs.Open(cancel, at[fuse.OpenIn](req), o)
	case 15: // READ
		in := at[fuse.ReadIn](req)
		buf := out[:min(int(in.Size), len(out))]
		res, st := fs.Read(cancel, in, buf)
		if res != nil {
			defer res.Done()
		}
		if st != fuse.OK {
			return 0, st
		}
		if res == nil {
			return 0, fuse.OK
		}
		data, st := res.Bytes(buf)
		if st != fuse.OK {
			return 0, st
		}
		return copy(buf, data), fuse.OK
	case 16: // WRITE
		in := at[fuse.WriteIn](req)
		o, n := outAt[fuse.WriteOut](out)
		o.Size, st = fs.Writev(cancel, in, [][]byte{payload})
		if st == fuse.ENOSYS {
			o.Size, st = fs.Write(cancel, in, payload)
		}
		return n, st
	case 17: // STATFS
		o, n := outAt[fuse.StatfsOut](out)
		return n, fs.StatFs(cancel, h, o)
	case 18: // RELEASE
		fs.Release(cancel, at[fuse.ReleaseIn](req))
		return 0, fuse.OK
	case 20: // FSYNC
		return 0, fs.Fsync(cancel, at[fuse.FsyncIn](req))
	case 21: // SETXATTR: name, then the value
		if b.opts.DisableXAttrs {
			return 0, fuse.ENOSYS
		}
		i := bytes.IndexByte(payload, 0)
		if i < 0 {
			return 0, fuse.EINVAL
		}
		return 0, fs.SetXAttr(cancel, at[fuse.SetXAttrIn](req), string(payload[:i]), payload[i+1:])
	case 22, 23: // GETXATTR, LISTXATTR
		return b.xattr(cancel, h, req, payload, out)
	case 24: // REMOVEXATTR
		if b.opts.DisableXAttrs {
			return 0, fuse.ENOSYS
		}
		return 0, fs.RemoveXAttr(cancel, h, cstring(payload))
	case 25: // FLUSH
		return 0, fs.Flush(cancel, at[fuse.FlushIn](req))
	case 27: // OPENDIR
		o, n := outAt[fuse.OpenOut](out)
		return n, fs.OpenDir(cancel, at[fuse.OpenIn](req), o)
	case 28, 44: // READDIR, READDIRPLUS
		in := at[fuse.ReadIn](req)
		l := fuse.NewDirEntryList(out[:min(int(in.Size), len(out))], in.Offset)
		if h.Opcode == 28 {
			st = fs.ReadDir(cancel, in, l)
		} else {
			st = fs.ReadDirPlus(cancel, in, l)
		}
		return len(l.Bytes()), st
	case 29: // RELEASEDIR
		fs.ReleaseDir(at[fuse.ReleaseIn](req))
		return 0, fuse.OK
	case 30: // FSYNCDIR
		return 0, fs.FsyncDir(cancel, at[fuse.FsyncIn](req))
	case 31: // GETLK
		o, n := outAt[fuse.LkOut](out)
		return n, fs.GetLk(cancel, at[fuse.LkIn](req), o)
	case 32: // SETLK
		return 0, fs.SetLk(cancel, at[fuse.LkIn](req))
	case 33: // SETLKW
		return 0, fs.SetLkw(cancel, at[fuse.LkIn](req))
	case 34: // ACCESS
		return 0, fs.Access(cancel, at[fuse.AccessIn](req))
	case 35: // CREATE
		o, n := outAt[fuse.CreateOut](out)
		return n, fs.Create(cancel, at[fuse.CreateIn](req), cstring(payload), o)
	case 38: // DESTROY
		return 0, fuse.OK
	case 43: // FALLOCATE
		return 0, fs.Fallocate(cancel, at[fuse.FallocateIn](req))
	case 46: // LSEEK
		o, n := outAt[fuse.LseekOut](out)
		return n, fs.Lseek(cancel, at[fuse.LseekIn](req), o)
	case 47: // COPY_FILE_RANGE
		o, n := outAt[fuse.WriteOut](out)
		o.Size, st = fs.CopyFileRange(cancel, at[fuse.CopyFileRangeIn](req))
		return n, st
	case 51: // TMPFILE
		o, n := outAt[fuse.CreateOut](out)
		return n, fs.Tmpfile(cancel, at[fuse.CreateIn](req), o)
	}
	// IOCTL, POLL, BMAP, STATX and newer: go-fuse answers ENOSYS too
	// (IOCTL aside, which draftfs does not implement).
	return 0, fuse.ENOSYS
}

// xattr mirrors go-fuse's doGetXAttr: a zero size asks for the size
// only (GetXAttrOut), otherwise the data comes back bare.
func (b *bridge) xattr(cancel <-chan struct{}, h *fuse.InHeader, req *Request, payload, out []byte) (int, fuse.Status) {
	if b.opts.DisableXAttrs {
		return 0, fuse.ENOSYS
	}
	name := cstring(payload)
	if b.opts.IgnoreSecurityLabels && h.Opcode == 22 &&
		(name == "security.capability" || name == "system.posix_acl_access" || name == "system.posix_acl_default") {
		return 0, fuse.ENOATTR
	}
	in := at[fuse.GetXAttrIn](req)
	dest := out[:min(int(in.Size), len(out))]
	var sz uint32
	var st fuse.Status
	if h.Opcode == 22 {
		sz, st = b.fs.GetXAttr(cancel, h, name, dest)
	} else {
		sz, st = b.fs.ListXAttr(cancel, h, dest)
	}
	if in.Size == 0 {
		if st == fuse.ERANGE {
			st = fuse.OK
		}
		if st != fuse.OK {
			return 0, st
		}
		o, n := outAt[fuse.GetXAttrOut](out)
		o.Size = sz
		return n, fuse.OK
	}
	if st != fuse.OK {
		return 0, st
	}
	return int(min(sz, uint32(len(dest)))), fuse.OK
}

func twoNames(p []byte) (string, string, bool) {
	i := bytes.IndexByte(p, 0)
	if i < 0 {
		return "", "", false
	}
	rest := p[i+1:]
	j := bytes.IndexByte(rest, 0)
	if j < 0 {
		return "", "", false
	}
	return string(p[:i]), string(rest[:j]), true
}

// pollHackAnswer answers requests about go-fuse's poll hack file (see
// PollHack) as go-fuse's server does: the file system never sees them.
// Its RELEASE, for one, may come over the ring.
func pollHackAnswer(h *fuse.InHeader, out []byte) (int, fuse.Status) {
	attr := fuse.Attr{Ino: pollHackInode, Mode: syscall.S_IFREG | 0o644, Nlink: 1}
	switch h.Opcode {
	case 1: // LOOKUP
		o, n := outAt[fuse.EntryOut](out)
		*o = fuse.EntryOut{NodeId: pollHackInode, Attr: attr}
		return n, fuse.OK
	case 14: // OPEN
		o, n := outAt[fuse.OpenOut](out)
		o.Fh = pollHackInode
		return n, fuse.OK
	case 3, 4: // GETATTR, SETATTR
		o, n := outAt[fuse.AttrOut](out)
		o.Attr = attr
		return n, fuse.OK
	case 22: // GETXATTR
		return 0, fuse.ENODATA
	case 40: // POLL
		return 0, fuse.ENOSYS
	case 34, 25, 18: // ACCESS, FLUSH, RELEASE
		return 0, fuse.OK
	}
	// Not ENOSYS, which would switch the operation off for every file.
	return 0, fuse.ERANGE
}
