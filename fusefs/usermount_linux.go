package fusefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"
)

// CheckUserMount says what keeps this process, not root, from mounting:
// a user mounts through the set-uid fusermount3 (package fuse3), which
// opens /dev/fuse as the user. It returns nil when nothing known does,
// else an error saying what is missing and how to fix it.
func CheckUserMount() error {
	if _, err := exec.LookPath("fusermount3"); err != nil {
		if _, err := exec.LookPath("fusermount"); err != nil {
			return errors.New("fusefs: mounting as an ordinary user needs fusermount3, which is not installed: install the fuse3 package (apt install fuse3), or run as root")
		}
	}
	err := unix.Access("/dev/fuse", unix.R_OK|unix.W_OK)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("fusefs: there is no /dev/fuse: load the FUSE module (modprobe fuse, as root), or in a container pass the device in (--device /dev/fuse)")
	}
	mode := ""
	if fi, serr := os.Stat("/dev/fuse"); serr == nil {
		mode = fmt.Sprintf(" (mode %04o)", fi.Mode().Perm())
	}
	return fmt.Errorf("fusefs: this user may not open /dev/fuse%s: %v: FUSE is closed to ordinary users on this machine, where a stock Debian has it 0666; as root, chmod 0666 /dev/fuse (for good: a udev rule KERNEL==\"fuse\", MODE=\"0666\"), or run draftfs as root", mode, err)
}
