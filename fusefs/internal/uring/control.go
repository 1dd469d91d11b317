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
		arg := buf[hsize:n]
		switch in.Opcode {
		case opForget: // struct fuse_forget_in
			if len(arg) >= 8 && in.NodeId != pollHackInode {
				forget(in.NodeId, *(*uint64)(unsafe.Pointer(&arg[0])))
			}
		case opBatchForget: // struct fuse_batch_forget_in, then fuse_forget_one each
			if len(arg) < 8 {
				continue
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
		case opInterrupt: // struct fuse_interrupt_in; no reply
			if len(arg) >= 8 {
				s.interrupt(*(*uint64)(unsafe.Pointer(&arg[0])))
			}
		default:
			// Nothing else comes here once the ring is ready; answer
			// rather than leave a caller waiting.
			out := fuse.OutHeader{Length: 16, Status: -int32(unix.ENOSYS), Unique: in.Unique}
			unix.Write(fd, (*[16]byte)(unsafe.Pointer(&out))[:])
		}
	}
}

// begin records e's request as in flight, cancelled already when its
// interrupt came first: the kernel hands a request to an entry and may
// queue its interrupt on /dev/fuse before the entry's worker wakes.
func (s *Server) begin(e *entry, unique uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight[unique] = e
	if i := slices.Index(s.early[:], unique); i >= 0 {
		s.early[i] = 0
		s.cancel(e)
	}
}

// end forgets e's request; a closed cancel channel is replaced, since
// the entry's next request must not start cancelled.
func (s *Server) end(e *entry, unique uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, unique)
	if e.cancelled {
		e.cancel, e.cancelled = make(chan struct{}), false
	}
}

// interrupt cancels the request unique. One no worker holds is either
// answered already or not yet taken: the last few such are kept for
// begin (uniques only grow, and the kernel sends one interrupt per
// request).
func (s *Server) interrupt(unique uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.inflight[unique]; e != nil {
		s.cancel(e)
		return
	}
	s.early[s.nextEarly] = unique
	s.nextEarly = (s.nextEarly + 1) % len(s.early)
}

func (s *Server) cancel(e *entry) {
	if !e.cancelled {
		close(e.cancel)
		e.cancelled = true
	}
}
