package uring

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// FUSE-over-io_uring ABI (include/uapi/linux/fuse.h, 7.42+).
const (
	cmdRegister       = 1 // FUSE_IO_URING_CMD_REGISTER
	cmdCommitAndFetch = 2 // FUSE_IO_URING_CMD_COMMIT_AND_FETCH

	// struct fuse_uring_req_header: in_out[128] (fuse_in_header on
	// fetch, fuse_out_header on commit), op_in[128] (the opcode's fixed
	// argument), then struct fuse_uring_ent_in_out.
	headerSize      = 288
	opInOffset      = 128
	commitIDOffset  = 256 + 8
	payloadSzOffset = 256 + 16

	// struct fuse_uring_cmd_req inside the SQE's command area.
	cmdCommitID = sqeCmdOffset + 8
	cmdQID      = sqeCmdOffset + 16

	// CapOverIOURing is the INIT flag (flags2 bit 9) by which a server
	// tells the kernel it will register ring entries.
	CapOverIOURing = uint64(1) << 41

	enableParam = "/sys/module/fuse/parameters/enable_uring"
)

// Request is one FUSE request: the header, the opcode's fixed argument
// and what follows it (names, written data).
type Request struct {
	Header  *fuse.InHeader
	Op      []byte
	Payload []byte
}

// Handler answers a request: it writes the reply body into out and
// returns its length, or an errno. Forget, batch forget and interrupt
// get no reply (the transport drops whatever the handler returns).
type Handler func(req *Request, out []byte) (int, syscall.Errno)

// Enabled says whether the running kernel accepts ring registrations
// from new connections.
func Enabled() bool {
	b, err := os.ReadFile(enableParam)
	return err == nil && strings.TrimSpace(string(b)) == "Y"
}

// SetEnabled switches the machine-wide parameter and returns the value
// to restore. It needs root.
func SetEnabled(on bool) (restore func() error, err error) {
	old, err := os.ReadFile(enableParam)
	if err != nil {
		return nil, fmt.Errorf("fuse over io_uring: %w (kernel older than 6.14 or fuse built without it)", err)
	}
	v := "N"
	if on {
		v = "Y"
	}
	if err := os.WriteFile(enableParam, []byte(v), 0); err != nil {
		return nil, fmt.Errorf("fuse over io_uring: set %s: %w", enableParam, err)
	}
	return func() error { return os.WriteFile(enableParam, old, 0) }, nil
}

// queueCount is the number of ring queues the kernel waits for before
// it sends requests over the ring: one per possible CPU
// (num_possible_cpus, which can exceed the online count).
func queueCount() (int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, found := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("cpu/possible %q: %w", b, err)
		}
		z := a
		if found {
			if z, err = strconv.Atoi(hi); err != nil {
				return 0, fmt.Errorf("cpu/possible %q: %w", b, err)
			}
		}
		n += z - a + 1
	}
	return n, nil
}

// Server serves a FUSE connection's requests from io_uring queues, one
// per possible CPU, each on its own locked OS thread.
type Server struct {
	dev     int
	handler Handler
	depth   int
	payload int
	wg      sync.WaitGroup
	errMu   sync.Mutex
	err     error
}

// Serve registers depth ring entries per queue on the /dev/fuse
// descriptor dev, whose INIT the caller has answered with
// CapOverIOURing, and serves requests until the connection ends.
// maxPayload is the larger of the INIT reply's max_write and max_pages
// pages (the kernel refuses smaller entry buffers). When Serve returns
// without error the kernel sends every request but forgets and
// interrupts over the ring; those still come through read(2).
func Serve(dev int, depth, maxPayload int, h Handler) (*Server, error) {
	n, err := queueCount()
	if err != nil {
		return nil, fmt.Errorf("fuse over io_uring: count queues: %w", err)
	}
	s := &Server{dev: dev, handler: h, depth: depth, payload: max(maxPayload, 8192)}
	ready := make(chan error, n)
	for qid := range n {
		s.wg.Add(1)
		go s.runQueue(uint16(qid), ready)
	}
	var errs []error
	for range n {
		errs = append(errs, <-ready)
	}
	if err := errors.Join(errs...); err != nil {
		return s, fmt.Errorf("fuse over io_uring: register: %w", err)
	}
	return s, nil
}

// Wait blocks until every queue has stopped (the connection ended) and
// returns the first unexpected error.
func (s *Server) Wait() error {
	s.wg.Wait()
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

func (s *Server) fail(err error) {
	s.errMu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.errMu.Unlock()
}

type entry struct {
	hdr     []byte
	payload []byte
	out     []byte // reply body scratch: the payload buffer is also where it goes
}

func (s *Server) runQueue(qid uint16, ready chan<- error) {
	defer s.wg.Done()
	// The ring is single-issuer with deferred task work: the kernel
	// copies requests in while this very thread waits in io_uring_enter.
	// The thread is never unlocked, so it exits with the goroutine.
	runtime.LockOSThread()
	r, err := newRing(uint32(2 * s.depth))
	if err != nil {
		ready <- err
		return
	}
	defer r.close()
	// Entry buffers are mmapped: the kernel keeps their addresses for
	// the connection's life, which Go's heap does not promise.
	per := headerSize + s.payload
	mem, err := unix.Mmap(-1, 0, s.depth*per+s.depth*2*int(unsafe.Sizeof(unix.Iovec{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		ready <- fmt.Errorf("mmap ring buffers: %w", err)
		return
	}
	defer unix.Munmap(mem)
	iovs := unsafe.Slice((*unix.Iovec)(unsafe.Pointer(&mem[s.depth*per])), 2*s.depth)
	ents := make([]entry, s.depth)
	for i := range ents {
		e := &ents[i]
		e.hdr = mem[i*per : i*per+headerSize]
		e.payload = mem[i*per+headerSize : (i+1)*per]
		iovs[2*i] = unix.Iovec{Base: &e.hdr[0], Len: headerSize}
		iovs[2*i+1] = unix.Iovec{Base: &e.payload[0], Len: uint64(s.payload)}
		sqe := r.nextSQE()
		s.prepCmd(sqe, cmdRegister, uint64(i), qid)
		*(*uint64)(unsafe.Pointer(&sqe[16])) = uint64(uintptr(unsafe.Pointer(&iovs[2*i])))
		*(*uint32)(unsafe.Pointer(&sqe[24])) = 2
	}
	// A registration the kernel accepts completes only when a request
	// arrives; one it refuses completes at once with the errno.
	if err := r.enter(0); err != nil {
		ready <- err
		return
	}
	var regErr error
	live := s.depth
	r.completions(func(ud uint64, res int32) {
		switch {
		case res < 0:
			regErr = syscall.Errno(-res)
			live--
		default: // registered, and a request was already waiting
			s.answer(r, &ents[ud], ud, qid)
		}
	})
	ready <- regErr
	if regErr != nil {
		return
	}
	for live > 0 {
		if err := r.enter(1); err != nil {
			s.fail(err)
			return
		}
		r.completions(func(ud uint64, res int32) {
			if res < 0 {
				// -ENOTCONN: the connection is torn down (unmount,
				// abort); each entry comes back once.
				if res != -int32(unix.ENOTCONN) && res != -int32(unix.ECONNABORTED) && res != -int32(unix.ECANCELED) {
					s.fail(fmt.Errorf("fuse over io_uring: queue %d: %w", qid, syscall.Errno(-res)))
				}
				live--
				return
			}
			s.answer(r, &ents[ud], ud, qid)
		})
	}
}

func (s *Server) prepCmd(sqe []byte, cmd uint32, ud uint64, qid uint16) {
	sqe[0] = opURingCmd
	*(*int32)(unsafe.Pointer(&sqe[4])) = int32(s.dev)
	*(*uint32)(unsafe.Pointer(&sqe[8])) = cmd
	*(*uint64)(unsafe.Pointer(&sqe[32])) = ud
	*(*uint16)(unsafe.Pointer(&sqe[cmdQID])) = qid
}

// answer serves the request in e and queues its commit, which also
// fetches the entry's next request.
func (s *Server) answer(r *ring, e *entry, ud uint64, qid uint16) {
	in := (*fuse.InHeader)(unsafe.Pointer(&e.hdr[0]))
	psz := *(*uint32)(unsafe.Pointer(&e.hdr[payloadSzOffset]))
	commitID := *(*uint64)(unsafe.Pointer(&e.hdr[commitIDOffset]))
	req := Request{Header: in, Op: e.hdr[opInOffset : opInOffset+opInSize[in.Opcode]], Payload: e.payload[:psz]}
	if e.out == nil {
		e.out = make([]byte, s.payload)
	}
	n, errno := s.handler(&req, e.out)
	unique := in.Unique
	if errno != 0 {
		n = 0
	} else {
		copy(e.payload, e.out[:n])
	}
	*(*fuse.OutHeader)(unsafe.Pointer(&e.hdr[0])) = fuse.OutHeader{Length: uint32(16 + n), Status: -int32(errno), Unique: unique}
	*(*uint32)(unsafe.Pointer(&e.hdr[payloadSzOffset])) = uint32(n)
	sqe := r.nextSQE()
	if sqe == nil { // cannot happen: at most depth commits for 2*depth slots
		r.enter(0)
		sqe = r.nextSQE()
	}
	s.prepCmd(sqe, cmdCommitAndFetch, ud, qid)
	*(*uint64)(unsafe.Pointer(&sqe[cmdCommitID])) = commitID
}
