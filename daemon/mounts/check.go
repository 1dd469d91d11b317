//go:build linux

package mounts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay/beneath"
)

// CheckUserMount says what keeps this process, not root, from mounting:
// a user mounts through the set-uid fusermount3 (package fuse3), which
// opens /dev/fuse as the user. It returns nil when nothing known does,
// else an error saying what is missing and how to fix it.
func CheckUserMount() error {
	if _, err := exec.LookPath("fusermount3"); err != nil {
		if _, err := exec.LookPath("fusermount"); err != nil {
			return errors.New("mounts: mounting as an ordinary user needs fusermount3, which is not installed: install the fuse3 package (apt install fuse3), or run as root")
		}
	}
	err := unix.Access("/dev/fuse", unix.R_OK|unix.W_OK)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("mounts: there is no /dev/fuse: load the FUSE module (modprobe fuse, as root), or in a container pass the device in (--device /dev/fuse)")
	}
	mode := ""
	if fi, serr := os.Stat("/dev/fuse"); serr == nil {
		mode = fmt.Sprintf(" (mode %04o)", fi.Mode().Perm())
	}
	return fmt.Errorf("mounts: this user may not open /dev/fuse%s: %v: FUSE is closed to ordinary users on this machine, where a stock Debian has it 0666; as root, chmod 0666 /dev/fuse (for good: a udev rule KERNEL==\"fuse\", MODE=\"0666\"), or run draftfs as root", mode, err)
}

// CheckPlacement refuses a mount point, existing or not, that lies
// inside the workspace or contains it. Callers that create a missing
// mount point check first, so that a refused one leaves nothing behind
// in the workspace.
func CheckPlacement(mp, workspace string) error {
	m, w := realPath(mp), realPath(workspace)
	switch {
	case beneath.Within(m, w):
		return fmt.Errorf("mounts: mount point %s is inside the workspace %s: choose a directory outside it", mp, workspace)
	case beneath.Within(w, m):
		return fmt.Errorf("mounts: mount point %s contains the workspace %s: choose a directory outside it", mp, workspace)
	}
	return nil
}

// realPath resolves symlinks in p where it can: in its deepest existing
// ancestor when p does not exist yet.
func realPath(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	if dir := filepath.Dir(p); dir != p {
		return filepath.Join(realPath(dir), filepath.Base(p))
	}
	return p
}
