package uring

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// opInSize is the size of each opcode's fixed argument (in_args[0] in
// the kernel), which read(2) returns right after the header, for a
// server that negotiates neither FUSE_SETXATTR_EXT nor request
// extensions (the sizes of include/uapi/linux/fuse.h at 7.45, which
// go-fuse's *In types share). An opcode missing here has none. The ring
// needs no table: its header's length gives the size.
var opInSize = [...]uint8{
	opForget: 8, 3: 16, 4: 88, 8: 16, 9: 8, 12: 8, 13: 8, 14: 8, 15: 40,
	16: 40, 18: 24, 20: 16, 21: 8, 22: 8, 23: 8, 25: 24, opInit: 64, 27: 8,
	28: 40, 29: 24, 30: 16, 31: 48, 32: 48, 33: 48, 34: 8, 35: 16,
	opInterrupt: 8, 37: 16, 39: 32, 40: 24, opBatchForget: 8, 43: 32,
	44: 40, 45: 16, 46: 24, 47: 56, 50: 8, 51: 16, 52: 24,
}

// opInit is INIT's opcode.
const opInit = 26

// DevServer serves a FUSE connection whose INIT is answered through
// read(2) and write(2) on its /dev/fuse descriptor, with the handler
// the ring uses: the classic transport, for kernels or machines where
// the ring is off.
//
// One goroutine at a time waits in read(2), and the goroutine that
// answered a request reads the next one when nobody else has started
// to. go-fuse's server keeps two or more readers waiting, and the
// kernel wakes them in turn (the longest waiting first): each request
// lands on another thread than the one that answered the last, and
// with one P (GOMAXPROCS=1, the daemon's default) that thread waits for
// Go's sysmon to take the P from the thread blocked in read(2) before it
// can run (20 µs or more; about a millisecond with the timer slack
// daemon/serving gives the daemon's threads). Here the thread that
// answered is the one the kernel wakes. A reader that takes a request
// lets go of the role and, unless one is pending already, starts a
// spare goroutine that takes the role if it is still free when it
// runs: with one P, when the handler blocks long enough for the P to
// go on (in a system call, sysmon hands it on after a tick or two), so
// that a handler waiting for another request to be answered (an
// invalidation waiting for a directory lock a LOOKUP holds) never waits
// for ever. Starting a
// goroutine per request instead, which then reads, costs more: the
// new goroutine grows its stack again through the handler's deep
// calls, and runs on another thread whenever the handler blocks.
type DevServer struct {
	dev     int // a dup of the connection's descriptor, ours to close
	handler Handler
	forget  Forgetter
	payload int
	flights
	// reading is held by the goroutine waiting in read(2) (see read).
	reading atomic.Bool
	// spare is set while a goroutine started to take the role has not
	// yet run.
	spare atomic.Bool
	// free holds the slots of answered requests, for the next readers
	// (as many as requests were ever answered at once; a sync.Pool
	// would drop them at every collection, and a slot is two buffers of
	// max_write).
	freeMu sync.Mutex
	free   []*devSlot
	wg     sync.WaitGroup
	done   chan struct{}
}

// devSlot is one request's buffers.
type devSlot struct {
	buf []byte  // what read(2) returns: header, argument, payload
	out []byte  // the reply: its header, then the body
	in  []byte  // header and fixed argument, contiguous, zero beyond
	req Request // the request answered: one allocation less each time
	canceler
}

// ServeDev serves dev (see DevServer) until the connection ends. forget
// takes FORGET and BATCH_FORGET; maxPayload is the INIT reply's
// max_write (the kernel refuses a read(2) buffer that could not hold
// the largest WRITE).
func ServeDev(dev int, maxPayload int, h Handler, forget Forgetter) (*DevServer, error) {
	own, err := unix.FcntlInt(uintptr(dev), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	d := &DevServer{dev: own, handler: h, forget: forget, payload: max(maxPayload, 8192), done: make(chan struct{})}
	d.wg.Add(1)
	go d.read()
	go func() {
		d.wg.Wait()
		unix.Close(own)
		close(d.done)
	}()
	return d, nil
}

// Wait blocks until the connection ended, every request is answered
// and the server's descriptor is closed.
func (d *DevServer) Wait() { <-d.done }

// read serves requests while it holds the reader's role (reading): it
// waits in read(2), lets go of the role, makes sure a spare goroutine
// will take it if it is still free when that runs, answers, and reads
// on if the role is still free.
func (d *DevServer) read() {
	defer d.wg.Done()
	if !d.reading.CompareAndSwap(false, true) {
		return
	}
	const hsize = int(unsafe.Sizeof(fuse.InHeader{}))
	s := d.slot()
	defer d.release(s)
	for {
		n, err := unix.Read(d.dev, s.buf)
		if err == unix.EINTR || err == unix.EAGAIN || err == unix.ENOENT {
			continue // ENOENT: the request was interrupted before we read it
		}
		if err != nil || n < hsize {
			return // ENODEV: unmounted
		}
		in := (*fuse.InHeader)(unsafe.Pointer(&s.buf[0]))
		if d.unanswered(in, s.buf[hsize:n], d.forget) {
			continue
		}
		d.reading.Store(false)
		if d.spare.CompareAndSwap(false, true) {
			d.wg.Add(1)
			go func() {
				d.spare.Store(false)
				d.read()
			}()
		}
		d.answer(s, n)
		if !d.reading.CompareAndSwap(false, true) {
			return
		}
	}
}

// slot returns a free slot, or a new one.
func (d *DevServer) slot() *devSlot {
	d.freeMu.Lock()
	defer d.freeMu.Unlock()
	if n := len(d.free); n > 0 {
		s := d.free[n-1]
		d.free = d.free[:n-1]
		return s
	}
	return &devSlot{
		buf:      make([]byte, d.payload+4096),
		out:      make([]byte, 16+d.payload),
		in:       make([]byte, inScratch),
		canceler: newCanceler(),
	}
}

func (d *DevServer) release(s *devSlot) {
	d.freeMu.Lock()
	defer d.freeMu.Unlock()
	d.free = append(d.free, s)
}

// answer serves the request of n bytes in s.buf.
func (d *DevServer) answer(s *devSlot, n int) {
	const hsize = int(unsafe.Sizeof(fuse.InHeader{}))
	in := (*fuse.InHeader)(unsafe.Pointer(&s.buf[0]))
	size := 0
	if int(in.Opcode) < len(opInSize) {
		size = min(int(opInSize[in.Opcode]), n-hsize)
	}
	copy(s.in, s.buf[:hsize+size])
	clear(s.in[hsize+size:])
	unique := in.Unique
	d.begin(&s.canceler, unique)
	s.req = Request{In: s.in[:hsize+size], Payload: s.buf[hsize+size : n], Cancel: s.ch}
	rn, errno := d.handler(&s.req, s.out[16:])
	d.end(&s.canceler, unique)
	if errno != 0 {
		rn = 0
	}
	*(*fuse.OutHeader)(unsafe.Pointer(&s.out[0])) = fuse.OutHeader{Length: uint32(16 + rn), Status: -int32(errno), Unique: unique}
	// ENOENT: the caller was interrupted and the kernel dropped the
	// request. ENODEV: unmounted; the reader sees it too.
	unix.Write(d.dev, s.out[:16+rn])
}
