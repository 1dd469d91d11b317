//go:build linux

package fusefs

import (
	"fmt"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/draftfs/draftfs/fusefs/internal/uring"
)

// ringWorkers is how many workers each CPU's ring queue starts with
// (more start when they are all busy: see uring.Serve).
const ringWorkers = 2

// ringMount prepares a mount served over io_uring (Options.IOURing):
// when the kernel offers it and requests are not logged (Debug), it
// mounts mp itself (mount(2) as root,
// fusermount3 otherwise: see uring.Mount) and returns the descriptor
// and the mount point to hand go-fuse ("/dev/fd/N"), with INIT set to
// accept the ring. Otherwise it says why and returns -1 and mp: the
// mount is served over /dev/fuse as usual.
func (s *Server) ringMount(mp string, mo *fuse.MountOptions) (dev int, mountArg string, err error) {
	// Asked for by default: the two cases where it is not used are
	// not worth a line in the log (the command says so when the user
	// asked explicitly).
	if mo.Debug || !uring.Enabled() {
		return -1, mp, nil
	}
	mo.ExtraCapabilities |= uring.CapOverIOURing
	dev, err = uring.Mount(mp, mo)
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
// them, and returns what serves the mount in place of srv.Serve: it
// returns once the connection ended. On the ring, a reader of our own
// takes what the kernel keeps on /dev/fuse (forgets, interrupts: see
// uring.Server.Control) and go-fuse's Server only sends notifications.
// Where INIT did not agree (the switch went off in between) or the
// queues cannot be registered, the kernel keeps sending requests to
// /dev/fuse, and srv.Serve serves them as usual: nothing is lost but
// the speed.
func (s *Server) serveRing(srv *fuse.Server, dev int, raw fuse.RawFileSystem, mo *fuse.MountOptions) (serve func()) {
	if srv.KernelSettings().Flags64()&uring.CapOverIOURing == 0 {
		s.logf("fusefs: io_uring: not agreed at INIT; serving over /dev/fuse")
		return srv.Serve
	}
	rs, err := uring.Serve(dev, ringWorkers, mo.MaxWrite, uring.RawHandler(raw, mo))
	if err == nil {
		err = rs.Control(raw.Forget)
	}
	if err != nil {
		s.logf("fusefs: io_uring: %v; serving over /dev/fuse", err)
		if rs == nil {
			return srv.Serve
		}
		return func() {
			srv.Serve()
			s.waitRing(rs)
		}
	}
	s.ring = true
	s.logf("fusefs: io_uring: serving %s over io_uring", s.mountpoint)
	return func() {
		s.waitRing(rs)
		// The connection is gone: go-fuse's Serve reads ENODEV at
		// once, then closes its descriptor and tells the file system
		// it was unmounted.
		srv.Serve()
	}
}

func (s *Server) waitRing(rs *uring.Server) {
	if err := rs.Wait(); err != nil {
		s.logf("fusefs: io_uring: %v", err)
	}
}

// pollHack makes the kernel learn that POLL is not served, as go-fuse
// does on the mounts it makes itself but not on a "/dev/fd/N" one (see
// uring.PollHack). Only once the mount is served: after an INIT that
// agreed on the ring, the kernel holds every request until the ring is
// ready.
func (s *Server) pollHack() {
	if err := uring.PollHack(s.mountpoint); err != nil {
		s.logf("fusefs: io_uring: %v", err)
	}
}

// IOURingOffered says whether the kernel offers FUSE over io_uring to
// new mounts (/sys/module/fuse/parameters/enable_uring is on).
func IOURingOffered() bool { return uring.Enabled() }

// HoldIOURing turns the kernel's FUSE-over-io_uring switch on until
// release, for tests of packages that mount (draftfs itself never
// changes it): test processes running at once share it, and the last
// one puts back the value found before the first. It needs root.
func HoldIOURing() (release func(), err error) { return uring.HoldEnabled() }

// Ring says whether requests are served over io_uring.
func (s *Server) Ring() bool { return s.ring }
