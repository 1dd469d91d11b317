//go:build linux

package fusefs

import (
	"errors"
	"fmt"
	"os"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/draftfs/draftfs/fusefs/internal/uring"
)

// ringWorkers is how many workers each CPU's ring queue starts with
// (more start when they are all busy: see uring.Serve).
const ringWorkers = 2

// errRingNeedsRoot: the ring needs the /dev/fuse descriptor, which only a
// mount made here with mount(2) gives (fusermount keeps it in go-fuse).
var errRingNeedsRoot = errors.New("needs root (the mount is made with mount(2) to keep its /dev/fuse descriptor)")

// ringMount prepares a mount served over io_uring (Options.IOURing):
// when the kernel offers it and the server may mount by itself, it
// mounts mp with mount(2) and returns the descriptor and the mount point
// to hand go-fuse ("/dev/fd/N"), with INIT set to accept the ring.
// Otherwise it says why and returns -1 and mp: the mount is served over
// /dev/fuse as usual.
func (s *Server) ringMount(mp string, mo *fuse.MountOptions) (dev int, mountArg string, err error) {
	switch {
	case mo.Debug:
		s.logf("fusefs: io_uring: off with --debug (requests on the ring are not logged); serving over /dev/fuse")
		return -1, mp, nil
	case os.Geteuid() != 0:
		s.logf("fusefs: io_uring: %v; serving over /dev/fuse", errRingNeedsRoot)
		return -1, mp, nil
	case !uring.Enabled():
		s.logf("fusefs: io_uring: the kernel does not offer it (Linux 6.14+; as root: echo Y > /sys/module/fuse/parameters/enable_uring); serving over /dev/fuse")
		return -1, mp, nil
	}
	mo.ExtraCapabilities |= uring.CapOverIOURing
	dev, err = uring.MountDirect(mp, mo)
	if err != nil {
		return -1, "", err
	}
	// go-fuse must take the descriptor, not mount again: with
	// DirectMount it would mount "/dev/fd/N" itself, which resolves to
	// /dev/fuse, and cover the device node.
	mo.DirectMount, mo.DirectMountStrict = false, false
	return dev, fmt.Sprintf("/dev/fd/%d", dev), nil
}

// serveRing moves srv's requests to io_uring queues once INIT agreed on
// them. Where it did not (the switch went off in between) or the queues
// cannot be registered, the kernel keeps sending requests to /dev/fuse,
// which go-fuse serves as usual: nothing is lost but the speed. The
// returned wait blocks until the ring's workers ended (after unmount).
func (s *Server) serveRing(srv *fuse.Server, dev int, raw fuse.RawFileSystem, mo *fuse.MountOptions) (wait func()) {
	none := func() {}
	if srv.KernelSettings().Flags64()&uring.CapOverIOURing == 0 {
		s.logf("fusefs: io_uring: not agreed at INIT; serving over /dev/fuse")
		return none
	}
	rs, err := uring.Serve(dev, ringWorkers, mo.MaxWrite, uring.RawHandler(raw, mo))
	if rs == nil {
		s.logf("fusefs: io_uring: %v; serving over /dev/fuse", err)
		return none
	}
	if err != nil {
		s.logf("fusefs: io_uring: %v; serving over /dev/fuse", err)
	}
	// go-fuse makes the kernel learn that POLL is not served only on
	// mounts it makes itself (see uring.PollHack). Only now: once INIT
	// agreed on the ring, the kernel holds every request until the
	// ring is ready.
	if err := uring.PollHack(s.mountpoint); err != nil {
		s.logf("fusefs: io_uring: %v", err)
	}
	s.ring = true
	s.logf("fusefs: io_uring: serving %s over io_uring", s.mountpoint)
	return func() {
		if err := rs.Wait(); err != nil {
			s.logf("fusefs: io_uring: %v", err)
		}
	}
}

// Ring says whether requests are served over io_uring.
func (s *Server) Ring() bool { return s.ring }
