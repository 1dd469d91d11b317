// Package uring serves a go-fuse file system's FUSE requests without
// go-fuse's server, through one handler (RawHandler): over io_uring
// (Linux 6.14+, enabled by /sys/module/fuse/parameters/enable_uring),
// where the server registers ring entries on the /dev/fuse descriptor
// with IORING_OP_URING_CMD and the kernel hands each FUSE request to a
// free entry instead of queueing it for read(2), the answer going back
// with the next entry fetch in one io_uring_enter; and over /dev/fuse
// with read(2) and write(2) (DevServer), one reader at a time. go-fuse
// does not speak the ring protocol, and no Go io_uring library on the
// module proxy issues 128-byte URING_CMD SQEs, so this package drives
// the ring with raw syscalls. It is not public API: see the package
// notes in /work/notes (session 10, i18u) for what the ring measured.
package uring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Values from <linux/io_uring.h>; x/sys/unix has the syscall numbers but
// none of the structures.
const (
	setupSQE128       = 1 << 10
	setupSingleIssuer = 1 << 12
	setupDeferTaskrun = 1 << 13
	featSingleMmap    = 1 << 0
	enterGetEvents    = 1 << 0
	offSQEs           = 0x10000000
	opURingCmd        = 46
	sqeSize           = 128 // SQE128: the FUSE command lives in the big SQE's 80-byte tail
	cqeSize           = 16
	sqeCmdOffset      = 48 // offsetof(struct io_uring_sqe, cmd)
)

type sqRingOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqRingOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type setupParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqRingOffsets
	cqOff                                                                  cqRingOffsets
}

// ring is one io_uring with 128-byte SQEs. It is single-issuer and
// defers task work to io_uring_enter: every method must be called from
// the OS thread that created it (the caller locks its goroutine to the
// thread), which is also the thread the kernel copies FUSE requests in
// from.
type ring struct {
	fd      int
	mem     []byte // SQ and CQ rings (one mapping: IORING_FEAT_SINGLE_MMAP)
	sqeMem  []byte
	sqHead  *uint32
	sqTail  *uint32
	sqMask  uint32
	sqArray []uint32
	cqHead  *uint32
	cqTail  *uint32
	cqMask  uint32
	cqOff   uint32
}

func newRing(entries uint32) (*ring, error) {
	p := setupParams{flags: setupSQE128 | setupSingleIssuer | setupDeferTaskrun}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r := &ring{fd: int(fd)}
	if p.features&featSingleMmap == 0 {
		r.close()
		return nil, errors.New("io_uring_setup: kernel lacks IORING_FEAT_SINGLE_MMAP")
	}
	size := max(p.sqOff.array+p.sqEntries*4, p.cqOff.cqes+p.cqEntries*cqeSize)
	mem, err := unix.Mmap(r.fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		r.close()
		return nil, fmt.Errorf("mmap io_uring rings: %w", err)
	}
	r.mem = mem
	sqes, err := unix.Mmap(r.fd, offSQEs, int(p.sqEntries*sqeSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		r.close()
		return nil, fmt.Errorf("mmap io_uring SQEs: %w", err)
	}
	r.sqeMem = sqes
	u32 := func(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	r.sqHead, r.sqTail, r.sqMask = u32(p.sqOff.head), u32(p.sqOff.tail), *u32(p.sqOff.ringMask)
	r.sqArray = unsafe.Slice(u32(p.sqOff.array), p.sqEntries)
	r.cqHead, r.cqTail, r.cqMask = u32(p.cqOff.head), u32(p.cqOff.tail), *u32(p.cqOff.ringMask)
	r.cqOff = p.cqOff.cqes
	return r, nil
}

func (r *ring) close() {
	if r.sqeMem != nil {
		unix.Munmap(r.sqeMem)
	}
	if r.mem != nil {
		unix.Munmap(r.mem)
	}
	unix.Close(r.fd)
}

// nextSQE returns the zeroed next submission slot, or nil when the
// submission queue is full (the caller submits first).
func (r *ring) nextSQE() []byte {
	tail := *r.sqTail
	if tail-atomic.LoadUint32(r.sqHead) > r.sqMask {
		return nil
	}
	idx := tail & r.sqMask
	sqe := r.sqeMem[idx*sqeSize : (idx+1)*sqeSize]
	clear(sqe)
	r.sqArray[idx] = idx
	atomic.StoreUint32(r.sqTail, tail+1)
	return sqe
}

// enter submits what is queued and waits for at least wait completions.
// Signals (the Go runtime preempts with SIGURG) interrupt the wait: the
// caller's loop just comes back.
func (r *ring) enter(wait uint32) error {
	toSubmit := atomic.LoadUint32(r.sqTail) - atomic.LoadUint32(r.sqHead)
	var flags uintptr
	if wait > 0 {
		flags = enterGetEvents
	}
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(wait), flags, 0, 0)
	if errno != 0 && errno != unix.EINTR && errno != unix.EAGAIN && errno != unix.EBUSY {
		return fmt.Errorf("io_uring_enter: %w", errno)
	}
	return nil
}

// completions calls f for each completion queued, then releases them.
func (r *ring) completions(f func(userData uint64, res int32)) {
	head := *r.cqHead
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		off := r.cqOff + (head&r.cqMask)*cqeSize
		cqe := r.mem[off : off+cqeSize]
		f(*(*uint64)(unsafe.Pointer(&cqe[0])), *(*int32)(unsafe.Pointer(&cqe[8])))
	}
	atomic.StoreUint32(r.cqHead, head)
}
