package uring

import (
	"slices"
	"sync"
)

// canceler is a request slot's Request.Cancel (a ring entry's, a
// /dev/fuse reader's): closed by an interrupt, replaced before the
// slot takes its next request.
type canceler struct {
	ch        chan struct{}
	cancelled bool
}

func newCanceler() canceler { return canceler{ch: make(chan struct{})} }

// flights holds the requests being answered, by unique, for the
// INTERRUPTs that name them; early, the last interrupts of requests no
// slot had yet taken (see interrupt).
type flights struct {
	mu        sync.Mutex
	inflight  map[uint64]*canceler
	early     [16]uint64
	nextEarly int
}

// begin records c's request as in flight, cancelled already when its
// interrupt came first: the kernel hands a request to a ring entry and
// may queue its interrupt on /dev/fuse before the entry's worker wakes,
// and a /dev/fuse reader takes it before the reader after it records it.
func (f *flights) begin(c *canceler, unique uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inflight == nil {
		f.inflight = map[uint64]*canceler{}
	}
	f.inflight[unique] = c
	if i := slices.Index(f.early[:], unique); i >= 0 {
		f.early[i] = 0
		c.cancel()
	}
}

// end forgets c's request; a closed channel is replaced, since the
// slot's next request must not start cancelled.
func (f *flights) end(c *canceler, unique uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.inflight, unique)
	if c.cancelled {
		*c = newCanceler()
	}
}

// interrupt cancels the request unique. One no slot holds is either
// answered already or not yet taken: the last few such are kept for
// begin (uniques only grow, and the kernel sends one interrupt per
// request).
func (f *flights) interrupt(unique uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.inflight[unique]; c != nil {
		c.cancel()
		return
	}
	f.early[f.nextEarly] = unique
	f.nextEarly = (f.nextEarly + 1) % len(f.early)
}

// cancel closes c's channel once; flights.mu is held.
func (c *canceler) cancel() {
	if !c.cancelled {
		close(c.ch)
		c.cancelled = true
	}
}
