//go:build linux

package fusefs

import (
	"context"
	"strings"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
)

// Extended attributes: the engine keeps user.* ones (copying a lower
// object up to set one); others are refused by it. go-fuse answers the
// kernel's security.capability queries, made before every write, itself
// (MountOptions.IgnoreSecurityLabels).

var (
	_ = (gofs.NodeGetxattrer)((*node)(nil))
	_ = (gofs.NodeListxattrer)((*node)(nil))
	_ = (gofs.NodeSetxattrer)((*node)(nil))
	_ = (gofs.NodeRemovexattrer)((*node)(nil))
)

// Getxattr implements NodeGetxattrer: an empty dest asks for the size.
func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	key, ok := n.key()
	if !ok {
		return 0, syscall.ENOENT
	}
	v, err := n.srv.fsys.Getxattr(key, attr)
	if err != nil {
		return 0, n.srv.errno("getxattr", err)
	}
	return fill(dest, v)
}

// Listxattr implements NodeListxattrer: NUL-terminated names.
func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	key, ok := n.key()
	if !ok {
		return 0, syscall.ENOENT
	}
	names, err := n.srv.fsys.Listxattr(key)
	if err != nil {
		return 0, n.srv.errno("listxattr", err)
	}
	var b strings.Builder
	for _, name := range names {
		b.WriteString(name)
		b.WriteByte(0)
	}
	return fill(dest, []byte(b.String()))
}

// fill copies v into dest for a getxattr or listxattr reply, or reports
// its size when dest is empty (a size query) or too small (ERANGE).
func fill(dest, v []byte) (uint32, syscall.Errno) {
	if len(dest) == 0 {
		return uint32(len(v)), 0
	}
	if len(dest) < len(v) {
		return uint32(len(v)), syscall.ERANGE
	}
	return uint32(copy(dest, v)), 0
}

// Setxattr implements NodeSetxattrer (XATTR_CREATE, XATTR_REPLACE).
func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	key, ok := n.key()
	if !ok {
		return syscall.ENOENT
	}
	return n.srv.errno("setxattr", n.srv.as(ctx).Setxattr(key, attr, data, int(flags)))
}

// Removexattr implements NodeRemovexattrer.
func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	key, ok := n.key()
	if !ok {
		return syscall.ENOENT
	}
	return n.srv.errno("removexattr", n.srv.as(ctx).Removexattr(key, attr))
}
