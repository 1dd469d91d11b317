package uring

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
)

// Request is one FUSE request: In holds the header and the opcode's
// fixed argument contiguous, as go-fuse's *In types lay them out, with
// at least inScratch bytes of capacity, zero past its length (so a
// shorter argument from an older protocol reads as zeros); Payload is
// what follows (names, written data).
type Request struct {
	In      []byte
	Payload []byte
	// Cancel is unique among the requests in flight (go-fuse's
	// RawFileSystem methods take it, and draftfs keys per-request state
	// by it); it is closed when the kernel interrupts the request (a
	// signal to the caller), which Server.Control reads.
	Cancel <-chan struct{}
}

// inScratch is the room a transport gives Request.In: the largest
// header plus fixed argument the kernel sends (SETATTR, 40+88) with
// margin.
const inScratch = 40 + 128

// Header is the request's fuse_in_header.
func (r *Request) Header() *fuse.InHeader { return (*fuse.InHeader)(unsafe.Pointer(&r.In[0])) }

// Op is the opcode's fixed argument.
func (r *Request) Op() []byte { return r.In[unsafe.Sizeof(fuse.InHeader{}):] }

// Handler answers a request: it writes the reply body into out and
// returns its length, or an errno. Forget, batch forget and interrupt
// get no reply (the transport drops whatever the handler returns). For
// the opcodes whose replies are bulk data and whose requests carry no
// payload (READ, READDIR, READDIRPLUS, READLINK), out may be the
// request's payload buffer itself: the reply is written in place. Calls
// run concurrently, on as many threads as the server has workers.
type Handler func(req *Request, out []byte) (int, syscall.Errno)

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
// per possible CPU (the kernel picks the queue of the CPU a request is
// made on), each served by workers threads.
type Server struct {
	dev     int // a dup of the connection's descriptor, ours to close
	handler Handler
	payload int
	idle    []atomic.Int32 // per queue: workers waiting for a request
	// starting counts per queue the workers started whose entry is not
	// registered yet: while one is, no other starts (see runWorker).
	starting []atomic.Int32
	count    []atomic.Int32 // per queue: workers started
	wg       sync.WaitGroup
	done     chan struct{} // closed once every worker ended and dev is closed
	errMu    sync.Mutex
	err      error

	// ctlDone is closed when the reader Control started has ended.
	ctlDone chan struct{}
	// flights are the requests the workers answer, for interrupts.
	flights
}

// Serve registers ring entries on the /dev/fuse descriptor dev, whose
// INIT the caller has answered with CapOverIOURing, and serves requests
// until the connection ends (unmount). maxPayload is the larger of the
// INIT reply's max_write and max_pages pages (the kernel refuses
// smaller entry buffers).
//
// Each worker is a locked OS thread with its own ring holding a single
// entry: the kernel gives a request only to an entry that is free, so a
// request that blocks (a lock wait, a commit in progress) holds up its
// own thread only. workers start per queue; when a queue's last idle
// worker takes a request another one starts (up to maxWorkers), as
// go-fuse starts a reader when its last one takes a request: a handler
// may wait for something that needs another request of the same queue
// answered (an invalidation waiting for a directory lock that a lookup
// holds), and with a fixed number of workers that would never come.
// The kernel gives a newly registered entry only requests that arrive
// after it: one queued while its CPU's queue had no free entry waits
// until an entry of that queue finishes a request. Once Serve returns
// without error the kernel sends every request but forgets and
// interrupts over the ring; those still come through read(2), which the
// caller keeps serving.
func Serve(dev int, workers, maxPayload int, h Handler) (*Server, error) {
	n, err := queueCount()
	if err != nil {
		return nil, fmt.Errorf("fuse over io_uring: count queues: %w", err)
	}
	// The ring's commands name the device by descriptor: a dup keeps
	// the number ours until the last worker is done, whoever closes dev.
	own, err := unix.FcntlInt(uintptr(dev), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("fuse over io_uring: dup /dev/fuse: %w", err)
	}
	s := &Server{dev: own, handler: h, payload: max(maxPayload, 8192), done: make(chan struct{}),
		idle: make([]atomic.Int32, n), starting: make([]atomic.Int32, n), count: make([]atomic.Int32, n)}
	ready := make(chan error, n*workers)
	for qid := range n {
		for range workers {
			s.start(uint16(qid), ready)
		}
	}
	var errs []error
	for range n * workers {
		errs = append(errs, <-ready)
	}
	go func() {
		s.wg.Wait()
		unix.Close(own)
		close(s.done)
	}()
	if err := errors.Join(errs...); err != nil {
		return s, fmt.Errorf("fuse over io_uring: register: %w", err)
	}
	return s, nil
}

// Wait blocks until every worker has stopped (the connection ended) and
// the server's descriptors are closed, and returns the first unexpected
// error.
func (s *Server) Wait() error {
	<-s.done
	if s.ctlDone != nil {
		<-s.ctlDone
	}
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

// entry is one ring entry's buffers, all in one anonymous mapping: the
// kernel keeps the header's and payload's addresses for the
// connection's life, which Go's heap does not promise; pages cost only
// once touched.
type entry struct {
	mem      []byte
	hdr      []byte // struct fuse_uring_req_header
	payload  []byte
	out      []byte // reply body, copied to payload at commit
	in       []byte // header and fixed argument, contiguous
	iov      *[2]unix.Iovec
	req      Request // the request answered: one allocation less each time
	canceler         // the request's Request.Cancel
}

func newEntry(payload int) (*entry, error) {
	iovSize := int(unsafe.Sizeof([2]unix.Iovec{}))
	size := headerSize + 2*payload + inScratch + iovSize
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mmap ring entry: %w", err)
	}
	e := &entry{mem: mem, canceler: newCanceler()}
	off := 0
	take := func(n int) []byte { b := mem[off : off+n : off+n]; off += n; return b }
	e.iov = (*[2]unix.Iovec)(unsafe.Pointer(&take(iovSize)[0]))
	e.hdr = take(headerSize)
	e.payload = take(payload)
	e.out = take(payload)
	e.in = take(inScratch)
	e.iov[0] = unix.Iovec{Base: &e.hdr[0], Len: headerSize}
	e.iov[1] = unix.Iovec{Base: &e.payload[0], Len: uint64(payload)}
	return e, nil
}

// maxWorkers bounds the workers of one queue: the requests one CPU's
// queue serves at once.
const maxWorkers = 128

// start starts a worker for queue qid; ready, when not nil, receives
// its registration's outcome.
func (s *Server) start(qid uint16, ready chan<- error) {
	if s.count[qid].Add(1) > maxWorkers {
		s.count[qid].Add(-1)
		return
	}
	s.starting[qid].Add(1)
	s.wg.Add(1)
	go s.runWorker(qid, ready)
}

// runWorker serves queue qid on one entry. When it takes the queue's
// last idle entry's request it starts another worker, unless one is
// starting: a new worker needs the daemon's one P to register, and with
// handlers holding it every request taken meanwhile found no idle
// worker, so that a burst of 20 callers (git status's threads) started
// the 128 a queue may have.
func (s *Server) runWorker(qid uint16, ready chan<- error) {
	defer s.wg.Done()
	defer s.count[qid].Add(-1)
	started := true // counted in starting
	settle := func() {
		if started {
			started = false
			s.starting[qid].Add(-1)
		}
	}
	defer settle()
	// The ring is single-issuer with deferred task work: the kernel
	// copies requests in while this very thread waits in io_uring_enter.
	// The thread is never unlocked, so it exits with the goroutine.
	runtime.LockOSThread()
	report := func(err error) {
		if ready != nil {
			ready <- err
		}
	}
	r, err := newRing(4)
	if err != nil {
		report(err)
		return
	}
	defer r.close()
	e, err := newEntry(s.payload)
	if err != nil {
		report(err)
		return
	}
	defer unix.Munmap(e.mem)
	sqe := r.nextSQE()
	s.prepCmd(sqe, cmdRegister, 0, qid)
	*(*uint64)(unsafe.Pointer(&sqe[16])) = uint64(uintptr(unsafe.Pointer(e.iov)))
	*(*uint32)(unsafe.Pointer(&sqe[24])) = 2
	// A registration the kernel accepts completes only when a request
	// arrives; one it refuses completes at once with the errno. The
	// entry is registered once enter returns: idle counts it from then
	// (its completions are handled on this thread, after).
	if err := r.enter(0); err != nil {
		report(err)
		return
	}
	s.idle[qid].Add(1)
	settle()
	live := true
	var regErr error
	registering := true
	handle := func(_ uint64, res int32) {
		if res < 0 {
			live = false
			s.idle[qid].Add(-1)
			if registering {
				regErr = syscall.Errno(-res)
				return
			}
			// -ENOTCONN: the connection is torn down (unmount, abort).
			if res != -int32(unix.ENOTCONN) && res != -int32(unix.ECONNABORTED) && res != -int32(unix.ECANCELED) {
				s.fail(fmt.Errorf("fuse over io_uring: queue %d: %w", qid, syscall.Errno(-res)))
			}
			return
		}
		if s.idle[qid].Add(-1) == 0 && s.starting[qid].Load() == 0 {
			s.start(qid, nil)
		}
		s.answer(r, e, qid)
		s.idle[qid].Add(1)
	}
	r.completions(handle)
	registering = false
	report(regErr)
	for live && regErr == nil {
		if err := r.enter(1); err != nil {
			s.fail(err)
			return
		}
		r.completions(handle)
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
func (s *Server) answer(r *ring, e *entry, qid uint16) {
	const hsize = int(unsafe.Sizeof(fuse.InHeader{}))
	in := (*fuse.InHeader)(unsafe.Pointer(&e.hdr[0]))
	psz := int(*(*uint32)(unsafe.Pointer(&e.hdr[payloadSzOffset])))
	commitID := *(*uint64)(unsafe.Pointer(&e.hdr[commitIDOffset]))
	// The header's length counts header, fixed argument and payload:
	// what is left is the argument's size, exact for every protocol
	// minor (SETXATTR's and RENAME's vary).
	opSize := min(max(int(in.Length)-hsize-psz, 0), inScratch-hsize, headerSize-opInOffset-32)
	copy(e.in, e.hdr[:hsize])
	copy(e.in[hsize:], e.hdr[opInOffset:opInOffset+opSize])
	clear(e.in[hsize+opSize:])
	unique := in.Unique
	s.begin(&e.canceler, unique)
	e.req = Request{In: e.in[:hsize+opSize], Payload: e.payload[:psz], Cancel: e.ch}
	out := e.out
	inPlace := bulkReply(in.Opcode) && psz == 0
	if inPlace {
		out = e.payload
	}
	n, errno := s.handler(&e.req, out)
	s.end(&e.canceler, unique)
	if errno != 0 {
		n = 0
	} else if !inPlace {
		copy(e.payload, e.out[:n])
	}
	*(*fuse.OutHeader)(unsafe.Pointer(&e.hdr[0])) = fuse.OutHeader{Length: uint32(16 + n), Status: -int32(errno), Unique: unique}
	*(*uint32)(unsafe.Pointer(&e.hdr[payloadSzOffset])) = uint32(n)
	sqe := r.nextSQE() // never full: one entry, one commit at a time
	s.prepCmd(sqe, cmdCommitAndFetch, 0, qid)
	*(*uint64)(unsafe.Pointer(&sqe[cmdCommitID])) = commitID
}

// bulkReply: opcodes whose reply is bulk data (see Handler).
func bulkReply(op uint32) bool {
	switch op {
	case 5, 15, 28, 44: // READLINK, READ, READDIR, READDIRPLUS
		return true
	}
	return false
}
