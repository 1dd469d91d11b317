package uring

import (
	"fmt"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Workers is how many workers each CPU's ring queue starts with (more
// start when they are all busy: see Serve).
const Workers = 2

// PrepareMount prepares a go-fuse mount served over io_uring: when the
// kernel offers it and requests are not logged (mo.Debug), it mounts mp
// itself (mount(2) as root, fusermount3 otherwise: see Mount) and
// returns the descriptor and the mount point to hand fuse.NewServer
// ("/dev/fd/N"), with INIT set to accept the ring. Otherwise it returns
// -1 and mp: the mount is served over /dev/fuse as usual.
func PrepareMount(mp string, mo *fuse.MountOptions) (dev int, mountArg string, err error) {
	// Asked for by default: the two cases where it is not used are
	// not worth a line in the log (the command says so when the user
	// asked explicitly).
	if mo.Debug || !Enabled() {
		return -1, mp, nil
	}
	mo.ExtraCapabilities |= CapOverIOURing
	dev, err = Mount(mp, mo)
	if err != nil {
		return -1, "", err
	}
	// go-fuse must take the descriptor, not mount again: with
	// DirectMount it would mount "/dev/fd/N" itself, which resolves to
	// /dev/fuse, and cover the device node.
	mo.DirectMount, mo.DirectMountStrict = false, false
	return dev, fmt.Sprintf("/dev/fd/%d", dev), nil
}

// ServeGoFuse moves srv's requests (srv mounted on dev by PrepareMount)
// to io_uring queues once INIT agreed on them, and returns what serves
// the mount in place of srv.Serve, which returns once the connection
// ended, and whether the ring serves. On the ring, a reader of our own
// takes what the kernel keeps on /dev/fuse (forgets, interrupts: see
// Server.Control) and go-fuse's Server only sends notifications. Where
// INIT did not agree (the switch went off in between) or the queues
// cannot be registered, the kernel keeps sending requests to /dev/fuse,
// and srv.Serve serves them as usual: nothing is lost but the speed.
func ServeGoFuse(srv *fuse.Server, dev int, raw fuse.RawFileSystem, mo *fuse.MountOptions, logf func(string, ...any)) (serve func(), ring bool) {
	if srv.KernelSettings().Flags64()&CapOverIOURing == 0 {
		logf("fusefs: io_uring: not agreed at INIT; serving over /dev/fuse")
		return srv.Serve, false
	}
	wait := func(rs *Server) {
		if err := rs.Wait(); err != nil {
			logf("fusefs: io_uring: %v", err)
		}
	}
	rs, err := Serve(dev, Workers, mo.MaxWrite, RawHandler(raw, mo))
	if err == nil {
		err = rs.Control(raw.Forget)
	}
	if err != nil {
		logf("fusefs: io_uring: %v; serving over /dev/fuse", err)
		if rs == nil {
			return srv.Serve, false
		}
		return func() {
			srv.Serve()
			wait(rs)
		}, false
	}
	return func() {
		wait(rs)
		// The connection is gone: go-fuse's Serve reads ENODEV at
		// once, then closes its descriptor and tells the file system
		// it was unmounted.
		srv.Serve()
	}, true
}
