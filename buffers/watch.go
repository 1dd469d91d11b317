package buffers

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// EventKind says what happened to a buffer.
type EventKind int

const (
	Opened  EventKind = iota + 1 // opened, or replaced by another Open
	Changed                      // text replaced or edited (or only its version bumped)
	Saved                        // written to disk by the editor: no longer dirty
	Closed
)

func (k EventKind) String() string {
	switch k {
	case Opened:
		return "opened"
	case Changed:
		return "changed"
	case Saved:
		return "saved"
	case Closed:
		return "closed"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event reports a change to the buffer at Path; Version is the buffer's
// version after it.
type Event struct {
	Path    string
	Kind    EventKind
	Version int64
}

type watcher struct {
	fn      func(Event)
	stopped atomic.Bool
}

// queued is an event and the watchers registered when it happened.
type queued struct {
	ev Event
	to []*watcher
}

// Watch calls fn after every later change to the Set, until cancel is
// called. See the package documentation (# Events) for when and where fn
// runs; fn must be quick. After cancel returns, fn is not called again
// unless a call is already under way. cancel may be called more than once.
func (s *Set) Watch(fn func(Event)) (cancel func()) {
	w := &watcher{fn: fn}
	s.watchMu.Lock()
	ws := append(slices.Clone(*s.watchers.Load()), w)
	s.watchers.Store(&ws)
	s.watchMu.Unlock()
	return sync.OnceFunc(func() {
		w.stopped.Store(true)
		s.watchMu.Lock()
		ws := slices.DeleteFunc(slices.Clone(*s.watchers.Load()), func(x *watcher) bool { return x == w })
		s.watchers.Store(&ws)
		s.watchMu.Unlock()
	})
}

// emit queues ev for delivery by deliver. Must be called with the lock
// that orders ev's change among the changes to its path held (buffer.mu
// or Set.mu), so the queue holds each path's events in order.
func (s *Set) emit(ev Event) {
	ws := *s.watchers.Load()
	if len(ws) == 0 {
		return
	}
	s.evMu.Lock()
	s.queue = append(s.queue, queued{ev: ev, to: ws})
	s.evMu.Unlock()
}

// deliver calls watchers for queued events, one event at a time in queue
// order. Every changing method calls it after releasing its locks; if
// another goroutine is already delivering, that one will get to the new
// events, so a watcher that changes the Set queues an event instead of
// recursing or deadlocking.
func (s *Set) deliver() {
	s.evMu.Lock()
	if s.delivering {
		s.evMu.Unlock()
		return
	}
	s.delivering = true
	for len(s.queue) > 0 {
		batch := s.queue
		s.queue = nil
		s.evMu.Unlock()
		s.call(batch)
		s.evMu.Lock()
	}
	// Still under evMu since the queue was seen empty: an emit cannot slip
	// in between and be left undelivered.
	s.delivering = false
	s.evMu.Unlock()
}

// call runs the watchers of a batch. If one panics, delivery is switched
// back on so later changes are still reported; the rest of the batch is
// lost with the panic.
func (s *Set) call(batch []queued) {
	done := false
	defer func() {
		if !done {
			s.evMu.Lock()
			s.delivering = false
			s.evMu.Unlock()
		}
	}()
	for _, q := range batch {
		for _, w := range q.to {
			if !w.stopped.Load() {
				w.fn(q.ev)
			}
		}
	}
	done = true
}
