package uring

import (
	"fmt"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Opcodes the kernel sends on /dev/fuse while the ring serves.
const (
	opForget      = 2
	opInterrupt   = 36
	opBatchForget = 42
)

// Control reads the connection's /dev/fuse descriptor for what the
// kernel never puts on the ring: FORGET and BATCH_FORGET, handed to
// forget, and INTERRUPT, which closes the interrupted request's
// Request.Cancel. Call it once Serve returned without error, and let
// nothing else read the descriptor from then on (go-fuse's Server.Serve
// included): the kernel looks an interrupt's request up among those
// read(2) returned on the descriptor that answers it, ring requests are
// never there, so an interrupt another reader takes is lost and the
// interrupted caller waits for the request to finish on its own. The
// reader ends with the connection; Wait waits for it too.
func (s *Server) Control(forget func(nodeID, nlookup uint64)) error {
	// A dup of its own: the reader may still be in read(2) when the
	// workers' descriptor is closed.
	fd, err := unix.FcntlInt(uintptr(s.dev), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("fuse over io_uring: dup /dev/fuse: %w", err)
	}
	s.ctlDone = make(chan struct{})
	go func() {
		defer close(s.ctlDone)
		defer unix.Close(fd)
		s.control(fd, forget)
	}()
	return nil
}

func (s *Server) control(fd int, forget func(nodeID, nlookup uint64)) {
	const hsize = int(unsafe.Sizeof(fuse.InHeader{}))
	// The kernel refuses a read(2) buffer that could not hold its
	// largest request, a WRITE of max_write bytes.
	buf := make([]byte, s.payload+4096)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR || err == unix.EAGAIN || err == unix.ENOENT {
			continue // ENOENT: the request was interrupted before we read it
		}
		if err != nil || n < hsize {
			return // ENODEV: unmounted
		}
		in := (*fuse.InHeader)(unsafe.Pointer(&buf[0]))
		if !s.unanswered(in, buf[hsize:n], forget) {
			// Nothing else comes here once the ring is ready; answer
			// rather than leave a caller waiting.
			out := fuse.OutHeader{Length: 16, Status: -int32(unix.ENOSYS), Unique: in.Unique}
			unix.Write(fd, (*[16]byte)(unsafe.Pointer(&out))[:])
		}
	}
}

// unanswered takes the requests that get no reply, which the kernel
// sends on /dev/fuse only: FORGET and BATCH_FORGET, handed to forget,
// and INTERRUPT, which cancels its request (see flights). It reports
// whether in was one of them; arg is what follows the header.
func (f *flights) unanswered(in *fuse.InHeader, arg []byte, forget func(nodeID, nlookup uint64)) bool {
	switch in.Opcode {
	case opForget: // struct fuse_forget_in
		if len(arg) >= 8 && in.NodeId != pollHackInode {
			forget(in.NodeId, *(*uint64)(unsafe.Pointer(&arg[0])))
		}
	case opBatchForget: // struct fuse_batch_forget_in, then fuse_forget_one each
		if len(arg) < 8 {
			return true
		}
		count := int(*(*uint32)(unsafe.Pointer(&arg[0])))
		for i := range count {
			off := 8 + 16*i
			if off+16 > len(arg) {
				break
			}
			node := *(*uint64)(unsafe.Pointer(&arg[off]))
			if node != pollHackInode {
				forget(node, *(*uint64)(unsafe.Pointer(&arg[off+8])))
			}
		}
	case opInterrupt: // struct fuse_interrupt_in
		if len(arg) >= 8 {
			f.interrupt(*(*uint64)(unsafe.Pointer(&arg[0])))
		}
	default:
		return false
	}
	return true
}
