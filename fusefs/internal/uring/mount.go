package uring

import (
	"fmt"
	"os"
	"strings"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// MountDirect mounts a FUSE file system at mountPoint with mount(2), as
// go-fuse's MountOptions.DirectMount does (same source, type, flags and
// options, so the mount table shows the same), but returns the
// /dev/fuse descriptor: the ring needs it, and go-fuse keeps its own
// private. Hand it to fuse.NewServer as the mount point
// "/dev/fd/<dev>". Only root may mount this way.
func MountDirect(mountPoint string, o *fuse.MountOptions) (dev int, err error) {
	var st unix.Stat_t
	if err := unix.Stat(mountPoint, &st); err != nil {
		return -1, fmt.Errorf("mount %s: %w", mountPoint, err)
	}
	dev, err = unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("mount %s: open /dev/fuse: %w", mountPoint, err)
	}
	source := o.FsName
	if source == "" {
		source = o.Name
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	if o.DirectMountFlags != 0 {
		flags = o.DirectMountFlags
	}
	data := []string{
		fmt.Sprintf("fd=%d", dev),
		fmt.Sprintf("rootmode=%o", st.Mode&unix.S_IFMT),
		fmt.Sprintf("user_id=%d", os.Geteuid()),
		fmt.Sprintf("group_id=%d", os.Getegid()),
		fmt.Sprintf("max_read=%d", o.MaxWrite),
	}
	for _, opt := range o.Options {
		switch opt {
		case "nodev":
			flags |= unix.MS_NODEV
		case "dev":
			flags &^= unix.MS_NODEV
		case "nosuid":
			flags |= unix.MS_NOSUID
		case "suid":
			flags &^= unix.MS_NOSUID
		case "noexec":
			flags |= unix.MS_NOEXEC
		case "exec":
			flags &^= unix.MS_NOEXEC
		default:
			data = append(data, opt)
		}
	}
	if o.AllowOther {
		data = append(data, "allow_other")
	}
	if err := unix.Mount(source, mountPoint, "fuse."+o.Name, flags, strings.Join(data, ",")); err != nil {
		unix.Close(dev)
		return -1, fmt.Errorf("mount %s: %w", mountPoint, err)
	}
	return dev, nil
}

// go-fuse's names for the file its Server answers to make the kernel
// learn that the file system does not poll (poll.go there).
const (
	pollHackName  = ".go-fuse-epoll-hack"
	pollHackInode = ^uint64(0)
)

// PollHack makes the kernel learn, before anything else opens a file,
// that the file system does not implement POLL, as go-fuse does on the
// mounts it makes itself but not on a "/dev/fd/N" one. Without it a Go
// program's first open of a file in the mount (the server's own
// process included) sends POLL from the runtime's epoll registration,
// which holds a P while it waits: if the runtime then stops the world,
// nothing answers. Call it once Serve returned: after an INIT that
// agreed on the ring the kernel holds every request until the ring is
// ready, and RawHandler answers the hack file as go-fuse's Server does.
func PollHack(mountPoint string) error {
	fd, err := unix.Open(mountPoint+"/"+pollHackName, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("poll hack: %w", err)
	}
	defer unix.Close(fd)
	unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLPRI | unix.POLLOUT}}, 0)
	return nil
}
