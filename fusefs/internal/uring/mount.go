package uring

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Mount mounts a FUSE file system at mountPoint and returns its
// /dev/fuse descriptor, which the ring needs and go-fuse keeps private
// on the mounts it makes: as root with mount(2) (MountDirect),
// otherwise through fusermount3 (MountFusermount). Hand the descriptor
// to fuse.NewServer as the mount point "/dev/fd/<dev>".
func Mount(mountPoint string, o *fuse.MountOptions) (dev int, err error) {
	if os.Geteuid() == 0 {
		return MountDirect(mountPoint, o)
	}
	return MountFusermount(mountPoint, o)
}

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

// MountFusermount mounts a FUSE file system at mountPoint through the
// set-user-ID fusermount3, the way go-fuse does for ordinary users
// (the same options, so the mount table shows the same), and returns
// the /dev/fuse descriptor fusermount3 opened and mounted: it passes it
// back over the socket named by _FUSE_COMMFD, as an SCM_RIGHTS message.
func MountFusermount(mountPoint string, o *fuse.MountOptions) (dev int, err error) {
	bin, err := exec.LookPath("fusermount3")
	if err != nil {
		if bin, err = exec.LookPath("fusermount"); err != nil {
			return -1, fmt.Errorf("mount %s: fusermount3 not found (install the fuse3 package)", mountPoint)
		}
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("mount %s: socketpair: %w", mountPoint, err)
	}
	defer unix.Close(pair[0])
	remote := os.NewFile(uintptr(pair[1]), "fusermount-commfd")
	defer remote.Close()
	cmd := exec.Command(bin, mountPoint, "-o", strings.Join(fusermountOptions(o), ","))
	cmd.Env = []string{"_FUSE_COMMFD=3"}
	cmd.ExtraFiles = []*os.File{remote} // descriptor 3
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return -1, fmt.Errorf("mount %s: %s: %v: %s", mountPoint, filepath.Base(bin), err, strings.TrimSpace(stderr.String()))
	}
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(pair[0], make([]byte, 1), oob, unix.MSG_CMSG_CLOEXEC|unix.MSG_DONTWAIT)
	if err == nil {
		dev, err = receivedFd(oob[:oobn])
	}
	if err != nil {
		// Mounted, but the descriptor is lost: nothing can serve it.
		exec.Command(bin, "-u", "-z", mountPoint).Run()
		return -1, fmt.Errorf("mount %s: %s passed no descriptor: %w", mountPoint, filepath.Base(bin), err)
	}
	return dev, nil
}

func receivedFd(oob []byte) (int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return -1, err
	}
	if len(msgs) != 1 {
		return -1, fmt.Errorf("%d control messages", len(msgs))
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil {
		return -1, err
	}
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("%d descriptors", len(fds))
	}
	return fds[0], nil
}

// fusermountOptions are go-fuse's options for fusermount3 (its
// MountOptions.optionsStrings on Linux), commas and backslashes in
// values escaped.
func fusermountOptions(o *fuse.MountOptions) []string {
	opts := slices.Clone(o.Options)
	if o.AllowOther {
		opts = append(opts, "allow_other")
	}
	if o.FsName != "" {
		opts = append(opts, "fsname="+o.FsName)
	}
	if o.Name != "" {
		opts = append(opts, "subtype="+o.Name)
	}
	opts = append(opts, fmt.Sprintf("max_read=%d", o.MaxWrite))
	if o.IDMappedMount && !slices.Contains(o.Options, "default_permissions") {
		opts = append(opts, "default_permissions")
	}
	for i, v := range opts {
		opts[i] = strings.NewReplacer(`\`, `\\`, `,`, `\,`).Replace(v)
	}
	return opts
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
