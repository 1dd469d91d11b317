package uring

// The classic /dev/fuse transport, for the tests' toy file system and
// BenchmarkTransport's side-by-side runs.

import (
	"sync"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

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

// serveToyDev starts readers goroutines reading requests from dev.
func serveToyDev(dev int, readers int, h Handler) *DevLoop {
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
		size := min(int(opInSize[in.Opcode]), n-hsize)
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
