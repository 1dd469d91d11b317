package uring

import (
	"fmt"
	"slices"
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
func (s *Server) Control(forget Forgetter) error {
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

func (s *Server) control(fd int, forget Forgetter) {
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

// Forgetter takes the nodes the kernel forgot, from one FORGET or
// BATCH_FORGET (never the poll hack's node); the slice is only valid
// during the call.
type Forgetter func([]Forgot)

// Forgot is a node the kernel forgot (struct fuse_forget_one): its ID,
// and how many of its lookups the kernel forgot.
type Forgot struct{ NodeID, Nlookup uint64 }

// ForgetEach is a Forgetter that hands each node to forget.
func ForgetEach(forget func(nodeID, nlookup uint64)) Forgetter {
	return func(nodes []Forgot) {
		for _, f := range nodes {
			forget(f.NodeID, f.Nlookup)
		}
	}
}

// unanswered takes the requests that get no reply, which the kernel
// sends on /dev/fuse only: FORGET and BATCH_FORGET, handed to forget,
// and INTERRUPT, which cancels its request (see flights). It reports
// whether in was one of them; arg is what follows the header (a batch's
// nodes are handed over in place).
func (f *flights) unanswered(in *fuse.InHeader, arg []byte, forget Forgetter) bool {
	switch in.Opcode {
	case opForget: // struct fuse_forget_in
		if len(arg) >= 8 && in.NodeId != pollHackInode {
			forget([]Forgot{{in.NodeId, *(*uint64)(unsafe.Pointer(&arg[0]))}})
		}
	case opBatchForget: // struct fuse_batch_forget_in, then fuse_forget_one each
		if len(arg) < 8 {
			return true
		}
		count := min(int(*(*uint32)(unsafe.Pointer(&arg[0]))), (len(arg)-8)/16)
		if count > 0 {
			nodes := unsafe.Slice((*Forgot)(unsafe.Pointer(&arg[8])), count)
			forget(slices.DeleteFunc(nodes, func(f Forgot) bool { return f.NodeID == pollHackInode }))
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
