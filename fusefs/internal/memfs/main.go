// Command memfs mounts a file system that keeps everything in memory
// and does nothing else: no disk, no draft, no log, served as the draftfs
// mount is (its transport: /dev/fuse reads and writes, or FUSE over
// io_uring with -io-uring where the kernel has it enabled; its mount
// options, cache timeouts and declined requests). scripts/bench runs its
// write lines through it beside draftfs, as their floor on the machine:
// what the kernel's round trips cost alone, the rest of draftfs's time
// being the engine's.
//
//	memfs [-debug] [-io-uring] MOUNTPOINT
//
// It serves until unmounted. It sets its process up as the draftfs
// daemon does (daemon/serving: its Go code on one CPU unless GOMAXPROCS
// is set, and its threads' timer slack; see the README's Runtime
// settings).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/draftfs/draftfs/daemon/mounts"
	"github.com/draftfs/draftfs/daemon/serving"
	"github.com/draftfs/draftfs/fusefs/internal/mountopts"
	"github.com/draftfs/draftfs/fusefs/internal/noopendir"
	"github.com/draftfs/draftfs/fusefs/internal/uring"
)

func main() {
	debug := flag.Bool("debug", false, "log every FUSE request (served by go-fuse's server)")
	ring := flag.Bool("io-uring", false, "serve over FUSE over io_uring where the kernel has it enabled")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: memfs [-debug] [-io-uring] MOUNTPOINT")
		os.Exit(2)
	}
	serving.Setup()
	serve, err := mount(flag.Arg(0), *debug, *ring)
	if err != nil {
		fmt.Fprintf(os.Stderr, "memfs: %v\n", err)
		os.Exit(1)
	}
	serve()
}

// mount serves a new, empty memory file system at dir, as fusefs serves
// a draft, and returns what serves it until it is unmounted.
func mount(dir string, debug, ring bool) (serve func(), err error) {
	logger := log.New(os.Stderr, "", 0)
	opts := mountopts.Options("memfs", "memfs", debug, logger)
	raw := rawFS{noopendir.FS{RawFileSystem: fs.NewNodeFS(newNode(syscall.S_IFDIR|0o755), opts)}}
	dev, mountArg, err := uring.PrepareMount(dir, &opts.MountOptions, ring)
	if err != nil {
		return nil, err
	}
	srv, err := fuse.NewServer(raw, mountArg, &opts.MountOptions)
	if err != nil {
		if dev >= 0 {
			mounts.UnmountFUSE(dir)
		}
		return nil, err
	}
	serve = srv.Serve
	if dev >= 0 {
		serve, _ = uring.ServeGoFuse(srv, dev, raw, &opts.MountOptions, logger.Printf)
	}
	go serve()
	if err := srv.WaitMount(); err != nil {
		return nil, err
	}
	if dev >= 0 {
		if err := uring.PollHack(dir); err != nil {
			logger.Printf("memfs: io_uring: %v", err)
		}
	}
	done := make(chan struct{})
	go func() {
		srv.Wait()
		close(done)
	}()
	return func() { <-done }, nil
}

// rawFS declines CREATE as fusefs does: the kernel then creates files
// with MKNOD and opens them itself (with OPEN declined too: no_open).
type rawFS struct{ noopendir.FS }

func (rawFS) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	return fuse.ENOSYS
}

// node is a directory, a regular file or a symlink, with its attributes
// and (files) content; the tree of names is go-fuse's (fs.Inode).
type node struct {
	fs.Inode
	mu     sync.Mutex
	attr   fuse.Attr
	data   []byte
	target []byte
	xattr  map[string][]byte
}

var (
	_ fs.NodeGetattrer     = (*node)(nil)
	_ fs.NodeSetattrer     = (*node)(nil)
	_ fs.NodeMknoder       = (*node)(nil)
	_ fs.NodeMkdirer       = (*node)(nil)
	_ fs.NodeSymlinker     = (*node)(nil)
	_ fs.NodeReadlinker    = (*node)(nil)
	_ fs.NodeUnlinker      = (*node)(nil)
	_ fs.NodeRmdirer       = (*node)(nil)
	_ fs.NodeRenamer       = (*node)(nil)
	_ fs.NodeOpener        = (*node)(nil)
	_ fs.NodeReader        = (*node)(nil)
	_ fs.NodeWriter        = (*node)(nil)
	_ fs.NodeFsyncer       = (*node)(nil)
	_ fs.NodeFlusher       = (*node)(nil)
	_ fs.NodeGetxattrer    = (*node)(nil)
	_ fs.NodeSetxattrer    = (*node)(nil)
	_ fs.NodeListxattrer   = (*node)(nil)
	_ fs.NodeRemovexattrer = (*node)(nil)
)

func newNode(mode uint32) *node {
	n := &node{}
	n.attr.Mode = mode
	n.attr.Nlink = 1
	now := time.Now()
	n.attr.SetTimes(&now, &now, &now)
	return n
}

// child puts c in n as name, owned by the caller.
func (n *node) child(ctx context.Context, name string, c *node, out *fuse.EntryOut) *fs.Inode {
	if caller, ok := fuse.FromContext(ctx); ok {
		c.attr.Owner = caller.Owner
	}
	ch := n.NewInode(ctx, c, fs.StableAttr{Mode: c.attr.Mode & syscall.S_IFMT})
	n.AddChild(name, ch, true)
	out.Attr = c.attr
	return ch
}

func (n *node) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.mu.Lock()
	defer n.mu.Unlock()
	out.Attr = n.attr
	out.Size = uint64(len(n.data))
	return 0
}

func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	n.mu.Lock()
	defer n.mu.Unlock()
	if m, ok := in.GetMode(); ok {
		n.attr.Mode = n.attr.Mode&syscall.S_IFMT | m&0o7777
	}
	if uid, ok := in.GetUID(); ok {
		n.attr.Uid = uid
	}
	if gid, ok := in.GetGID(); ok {
		n.attr.Gid = gid
	}
	if sz, ok := in.GetSize(); ok {
		if sz <= uint64(len(n.data)) {
			n.data = n.data[:sz]
		} else {
			n.data = append(n.data, make([]byte, sz-uint64(len(n.data)))...)
		}
	}
	a, aok := in.GetATime()
	m, mok := in.GetMTime()
	var ap, mp *time.Time
	if aok {
		ap = &a
	}
	if mok {
		mp = &m
	}
	now := time.Now()
	n.attr.SetTimes(ap, mp, &now)
	out.Attr = n.attr
	out.Size = uint64(len(n.data))
	return 0
}

func (n *node) Mknod(ctx context.Context, name string, mode, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, syscall.EPERM // files only: the write lines make no others
	}
	return n.child(ctx, name, newNode(mode), out), 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.child(ctx, name, newNode(syscall.S_IFDIR|mode&0o7777), out), 0
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	c := newNode(syscall.S_IFLNK | 0o777)
	c.target = []byte(target)
	c.attr.Size = uint64(len(target))
	return n.child(ctx, name, c, out), 0
}

func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	return n.target, 0
}

// Unlink, Rmdir and Rename answer; go-fuse changes its tree of names.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno { return 0 }

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	if c := n.GetChild(name); c != nil && len(c.Children()) > 0 {
		return syscall.ENOTEMPTY
	}
	return 0
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if flags != 0 {
		return syscall.EINVAL
	}
	if c := newParent.EmbeddedInode().GetChild(newName); c != nil && len(c.Children()) > 0 {
		return syscall.ENOTEMPTY
	}
	return 0
}

// Open declines, as fusefs does: the kernel opens files itself from
// then on (no_open) and truncates with SETATTR.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, 0, syscall.ENOSYS
}

func (n *node) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n.mu.Lock()
	defer n.mu.Unlock()
	off = min(off, int64(len(n.data)))
	return fuse.ReadResultData(append([]byte(nil), n.data[off:min(off+int64(len(dest)), int64(len(n.data)))]...)), 0
}

func (n *node) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if end := off + int64(len(data)); end > int64(len(n.data)) {
		n.data = append(n.data, make([]byte, end-int64(len(n.data)))...)
	}
	copy(n.data[off:], data)
	now := time.Now()
	n.attr.SetTimes(nil, &now, &now)
	return uint32(len(data)), 0
}

// Flush declines, as fusefs does: the kernel stops sending it.
func (n *node) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	return syscall.ENOSYS
}

// Fsync has nothing to make durable (pip syncs what it installs).
func (n *node) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	return 0
}

// Extended attributes, kept as they are set (cp -a and rsync -X set
// ACLs).
func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	n.mu.Lock()
	defer n.mu.Unlock()
	v, ok := n.xattr[attr]
	switch {
	case !ok:
		return 0, syscall.ENODATA
	case len(dest) < len(v):
		return uint32(len(v)), syscall.ERANGE
	}
	return uint32(copy(dest, v)), 0
}

func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.xattr == nil {
		n.xattr = map[string][]byte{}
	}
	n.xattr[attr] = append([]byte(nil), data...)
	return 0
}

func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var list []byte
	for k := range n.xattr {
		list = append(append(list, k...), 0)
	}
	if len(dest) < len(list) {
		return uint32(len(list)), syscall.ERANGE
	}
	return uint32(copy(dest, list)), 0
}

func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.xattr[attr]; !ok {
		return syscall.ENODATA
	}
	delete(n.xattr, attr)
	return 0
}
