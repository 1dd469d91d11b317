package uring

// The classic /dev/fuse transport, for the tests' toy file system and
// BenchmarkTransport's side-by-side runs.

import (
	"sync"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// opInit is INIT's opcode.
const opInit = 26

// opInSize is the size of each opcode's fixed argument (in_args[0] in
// the kernel), which read(2) returns right after the header, for a
// server that negotiates neither FUSE_SETXATTR_EXT nor request
// extensions (the sizes of include/uapi/linux/fuse.h at 7.45). The ring
// needs no table: its header's length gives the size.
var opInSize = map[uint32]int{
	1: 0, opForget: 8, 3: 16, 4: 88, 5: 0, 6: 0, 8: 16, 9: 8, 10: 0, 11: 0,
	12: 8, 13: 8, 14: 8, 15: 40, 16: 40, 17: 0, 18: 24, 20: 16, 21: 8,
	22: 8, 23: 8, 24: 0, 25: 24, opInit: 64, 27: 8, 28: 40, 29: 24, 30: 16,
	31: 56, 32: 56, 33: 56, 34: 8, 35: 16, opInterrupt: 8, 37: 16, 38: 0,
	39: 32, 40: 24, opBatchForget: 8, 43: 32, 44: 40, 45: 16, 46: 24,
	47: 56, 50: 8, 51: 16, 52: 24,
}

// DevLoop serves a FUSE connection through read(2) and write(2) on
// /dev/fuse: the classic transport, which a ring server keeps running
// for forgets and interrupts (the kernel never sends those over the
// ring).
type DevLoop struct {
	dev     int
	handler Handler
	// Initialized is closed once the INIT reply is written: from then
	// on the kernel accepts ring registrations.
	Initialized chan struct{}
	initOnce    sync.Once
	wg          sync.WaitGroup
}

// ServeDev starts readers goroutines reading requests from dev.
func ServeDev(dev int, readers int, h Handler) *DevLoop {
	l := &DevLoop{dev: dev, handler: h, Initialized: make(chan struct{})}
	for range readers {
		l.wg.Add(1)
		go l.read()
	}
	return l
}

// Wait blocks until the connection ends (read fails with ENODEV).
func (l *DevLoop) Wait() { l.wg.Wait() }

func (l *DevLoop) read() {
	defer l.wg.Done()
	buf := make([]byte, 128<<10+4096)
	out := make([]byte, 128<<10+16)
	inBuf := make([]byte, inScratch)
	cancel := make(chan struct{}) // unique per reader: one request at a time
	for {
		n, err := unix.Read(l.dev, buf)
		if err == unix.EINTR || err == unix.EAGAIN || err == unix.ENOENT {
			continue // ENOENT: the request was interrupted before we read it
		}
		if err != nil || n < int(unsafe.Sizeof(fuse.InHeader{})) {
			return // ENODEV: unmounted
		}
		in := (*fuse.InHeader)(unsafe.Pointer(&buf[0]))
		hsize := int(unsafe.Sizeof(fuse.InHeader{}))
		size := min(opInSize[in.Opcode], n-hsize)
		copy(inBuf, buf[:hsize+size])
		clear(inBuf[hsize+size:])
		req := Request{In: inBuf[:hsize+size], Payload: buf[hsize+size : n], Cancel: cancel}
		rn, errno := l.handler(&req, out[16:])
		switch in.Opcode {
		case opForget, opBatchForget, opInterrupt:
			continue
		}
		if errno != 0 {
			rn = 0
		}
		*(*fuse.OutHeader)(unsafe.Pointer(&out[0])) = fuse.OutHeader{Length: uint32(16 + rn), Status: -int32(errno), Unique: in.Unique}
		// ENOENT: the kernel dropped the request (interrupted): nothing to do.
		if _, err := unix.Write(l.dev, out[:16+rn]); err != nil && err != unix.ENOENT {
			return
		}
		if in.Opcode == opInit && errno == 0 {
			l.initOnce.Do(func() { close(l.Initialized) })
		}
	}
}
