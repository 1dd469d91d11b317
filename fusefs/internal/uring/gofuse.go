package uring

import (
	"errors"
	"fmt"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Workers is how many workers each CPU's ring queue starts with (more
// start when they are all busy: see Serve).
const Workers = 2

// PrepareMount prepares a go-fuse mount served by this package: unless
// requests are logged (mo.Debug: only go-fuse's server logs them), it
// mounts mp itself (mount(2) as root, fusermount3 otherwise: see Mount)
// and returns the descriptor and the mount point to hand fuse.NewServer
// ("/dev/fd/N"); with ring, INIT accepts the ring when the kernel
// offers it. With mo.Debug it returns -1 and mp: go-fuse mounts and
// serves as usual.
func PrepareMount(mp string, mo *fuse.MountOptions, ring bool) (dev int, mountArg string, err error) {
	if mo.Debug {
		return -1, mp, nil
	}
	if ring && Enabled() {
		mo.ExtraCapabilities |= CapOverIOURing
	}
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

// BatchForgetter is a file system that takes the nodes of a
// BATCH_FORGET together (see Forgetter).
type BatchForgetter interface {
	ForgetBatch([]Forgot)
}

// ServeGoFuse serves srv's requests (srv mounted on dev by PrepareMount,
// INIT answered) through RawHandler, and returns what serves the mount
// in place of srv.Serve, which returns once the connection ended, and
// whether the ring serves. Where INIT agreed on the ring, requests go to
// io_uring queues, and a reader of our own takes what the kernel keeps
// on /dev/fuse (forgets, interrupts: see Server.Control). Otherwise, or
// when the queues cannot be registered, a DevServer serves /dev/fuse:
// nothing is lost but the ring's speed. go-fuse's Server only sends
// notifications; once the connection is gone its Serve reads ENODEV at
// once, closes its descriptor and tells the file system it was
// unmounted. Forgets go to raw's ForgetBatch where it has one.
func ServeGoFuse(srv *fuse.Server, dev int, raw fuse.RawFileSystem, mo *fuse.MountOptions, logf func(string, ...any)) (serve func(), ring bool) {
	h := RawHandler(raw, mo)
	forget := ForgetEach(raw.Forget)
	if b, ok := raw.(BatchForgetter); ok {
		forget = b.ForgetBatch
	}
	wait := func(rs *Server) {
		if err := rs.Wait(); err != nil {
			logf("fusefs: io_uring: %v", err)
		}
	}
	var rs *Server
	if mo.ExtraCapabilities&CapOverIOURing != 0 {
		var err error
		switch {
		case srv.KernelSettings().Flags64()&CapOverIOURing == 0:
			err = errors.New("not agreed at INIT")
		default:
			if rs, err = Serve(dev, Workers, mo.MaxWrite, h); err == nil {
				err = rs.Control(forget)
			}
		}
		if err == nil {
			return func() {
				wait(rs)
				srv.Serve()
			}, true
		}
		logf("fusefs: io_uring: %v; serving over /dev/fuse", err)
	}
	ds, err := ServeDev(dev, mo.MaxWrite, h, forget)
	if err != nil {
		logf("fusefs: serving /dev/fuse: %v; go-fuse serves it", err)
		return srv.Serve, false
	}
	return func() {
		ds.Wait()
		if rs != nil {
			wait(rs)
		}
		srv.Serve()
	}, false
}
