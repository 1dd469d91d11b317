//go:build linux

package fusefs

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/draftfs/draftfs/overlay"
)

// The mount has FUSE's HANDLE_KILLPRIV_V2: the kernel leaves clearing
// set-id bits to the server, which spares a GETATTR before every chown.
// Linux clears them on a write or truncate by a caller without
// CAP_FSETID (the kernel flags those: WRITE_KILL_SUIDGID,
// FATTR_KILL_SUIDGID) and on every chown of a non-directory.

// killPriv is fi's mode without the set-id bits such a change clears:
// set-user-ID always; set-group-ID when group execute is set, or when
// caller is neither root nor in the file's group (as Linux's
// setattr_should_drop_sgid, with root standing for CAP_FSETID). kill
// reports whether any bit goes.
func killPriv(fi fs.FileInfo, caller *fuse.Caller) (_ fs.FileMode, kill bool) {
	mode := fi.Mode()
	drop := mode & fs.ModeSetuid
	if mode&fs.ModeSetgid != 0 {
		if mode&0o010 != 0 {
			drop |= fs.ModeSetgid
		} else if a, ok := fi.Sys().(*overlay.Attr); ok && !inGroupOrRoot(caller, a.Gid) {
			drop |= fs.ModeSetgid
		}
	}
	return mode &^ drop, drop != 0
}

// inGroupOrRoot reports whether caller is root or in group gid, its
// supplementary groups read from /proc (not in them when unreadable).
func inGroupOrRoot(caller *fuse.Caller, gid uint32) bool {
	if caller.Uid == 0 || caller.Gid == gid {
		return true
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", caller.Pid))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		groups, ok := strings.CutPrefix(sc.Text(), "Groups:")
		if !ok {
			continue
		}
		for _, g := range strings.Fields(groups) {
			if id, err := strconv.ParseUint(g, 10, 32); err == nil && uint32(id) == gid {
				return true
			}
		}
		return false
	}
	return false
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
