//go:build linux

package overlay

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// Caller is the process asking for a change, as the kernel names it:
// what the rules for clearing set-id bits depend on.
type Caller struct {
	Uid, Gid uint32
	Pid      uint32 // its supplementary groups are read from /proc
}

// KillPriv is fi's mode without the set-id bits that Linux clears on a
// write or truncate by a caller without CAP_FSETID, and on every chown
// of a non-directory: set-user-ID always; set-group-ID when group
// execute is set, or when the caller is neither root nor in the file's
// group (as Linux's setattr_should_drop_sgid, with root standing for
// CAP_FSETID). kill reports whether any bit goes. Front ends that take
// this job from the kernel (FUSE's HANDLE_KILLPRIV_V2) apply it.
func KillPriv(fi fs.FileInfo, c Caller) (_ fs.FileMode, kill bool) {
	mode := fi.Mode()
	drop := mode & fs.ModeSetuid
	if mode&fs.ModeSetgid != 0 {
		if mode&0o010 != 0 {
			drop |= fs.ModeSetgid
		} else if a, ok := fi.Sys().(*Attr); ok && !c.inGroupOrRoot(a.Gid) {
			drop |= fs.ModeSetgid
		}
	}
	return mode &^ drop, drop != 0
}

// inGroupOrRoot reports whether c is root or in group gid, its
// supplementary groups read from /proc (not in them when unreadable).
func (c Caller) inGroupOrRoot(gid uint32) bool {
	if c.Uid == 0 || c.Gid == gid {
		return true
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", c.Pid))
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
