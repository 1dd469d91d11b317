//go:build linux

package overlay

import (
	"sync"
	"sync/atomic"
	"time"
)

// ChangeKind says what happened to a path of the merged view.
type ChangeKind string

// Kinds of change.
const (
	ChangeWrite   ChangeKind = "write"   // content changed
	ChangeCreate  ChangeKind = "create"  // a new file, directory or link
	ChangeRemove  ChangeKind = "remove"  // the path is gone
	ChangeRename  ChangeKind = "rename"  // moved from Change.From
	ChangeAttr    ChangeKind = "attr"    // mode, times or owner
	ChangeCommit  ChangeKind = "commit"  // the draft entry went to disk
	ChangeDiscard ChangeKind = "discard" // the draft entry was dropped
	ChangeUndo    ChangeKind = "undo"    // a commit was reverted
	ChangeBuffer  ChangeKind = "buffer"  // an editor buffer changed
	ChangeDisk    ChangeKind = "disk"    // the file changed on disk
)

// Change is one event of the change feed.
type Change struct {
	// Draft names the draft the change is in; "" when it concerns the
	// layers below every draft (buffers and disk).
	Draft  string
	Path   string // workspace key; "" is the root
	From   string // the old key, for renames
	Kind   ChangeKind
	Source Source
	// By is who within the source made it (see [Source.By]).
	By string
	// Overflow: the subscriber fell behind and events were dropped before
	// this one; it must treat every path as changed.
	Overflow bool
}

// feedQueue is how many events a subscriber may fall behind by.
const feedQueue = 4096

// Subscription receives changes on C until Close.
type Subscription struct {
	C    <-chan Change
	ch   chan Change
	lost atomic.Bool
	f    *feed
	// followed: Settle waits for this subscriber (see SubscribeFollowed).
	followed bool // read only

	mu       sync.Mutex // protects the following
	sent     uint64     // changes queued on ch
	applied  uint64     // changes the subscriber said it applied
	progress chan struct{}
	closed   bool
}

// Close stops the subscription; C is closed.
func (s *Subscription) Close() { s.f.unsubscribe(s) }

// Applied tells Settle that the subscriber has applied n more changes
// taken off C.
func (s *Subscription) Applied(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied += uint64(n)
	if !s.closed {
		close(s.progress)
		s.progress = make(chan struct{})
	}
}

// TakeLost reports whether changes were dropped because the subscriber
// fell behind since the last call: when C is empty and it reports true,
// the subscriber must treat every path as changed.
func (s *Subscription) TakeLost() bool { return s.lost.Swap(false) }

// Follow applies the changes on C with apply until the subscription
// closes, a batch of what is queued at a time, runs flush after each
// batch, and then reports it applied ([Subscription.Applied]). When
// changes were lost, lost runs after the batch: the subscriber must
// treat every path as changed.
func (s *Subscription) Follow(apply func(Change), flush, lost func()) {
	for c := range s.C {
		n := 1
		apply(c)
	drain:
		for {
			select {
			case c, ok := <-s.C:
				if !ok {
					break drain
				}
				apply(c)
				n++
			default:
				break drain
			}
		}
		flush()
		if s.TakeLost() {
			lost()
		}
		s.Applied(n)
	}
}

// caughtUp waits until the subscriber has applied every change queued
// for it and has none lost, or the deadline passes (false).
func (s *Subscription) caughtUp(deadline time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.closed && (s.applied < s.sent || s.lost.Load()) {
		ch := s.progress
		s.mu.Unlock()
		wait := time.NewTimer(time.Until(deadline))
		select {
		case <-ch:
			wait.Stop()
		case <-wait.C:
			s.mu.Lock()
			return false
		}
		s.mu.Lock()
	}
	return true
}

// feed fans changes out to subscribers without ever blocking publish
// (publishPaced waits a bounded time).
type feed struct {
	mu   sync.Mutex // protects subs and sending on their channels
	subs map[*Subscription]struct{}
	seq  atomic.Uint64 // publishes so far, counted before any is sent
	// pace lets one publishPaced at a time wait for room: a part of a
	// commit's changes waiting for room for all of it would otherwise
	// wait for ever while the disk watcher takes each place a subscriber
	// frees, one change at a time, until its timeout overflows the queue.
	pace sync.Mutex
}

func (f *feed) subscribe(followed bool) *Subscription {
	ch := make(chan Change, feedQueue)
	s := &Subscription{C: ch, ch: ch, f: f, followed: followed, progress: make(chan struct{})}
	f.mu.Lock()
	if f.subs == nil {
		f.subs = map[*Subscription]struct{}{}
	}
	f.subs[s] = struct{}{}
	f.mu.Unlock()
	return s
}

func (f *feed) unsubscribe(s *Subscription) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.subs[s]; ok {
		delete(f.subs, s)
		close(s.ch)
		s.mu.Lock()
		s.closed = true
		close(s.progress)
		s.mu.Unlock()
	}
}

// publishPaced is publish for the many changes of a commit, undo or
// discard, or a burst of disk changes, from a caller holding no lock a
// subscriber may need: it hands them over in parts, each once every
// followed subscriber (a mount) has room for it in its queue, or once
// the subscriber it waits for made no progress for paceTimeout. All at
// once, the paths of a large commit overflow a mount's queue, and a
// mount that lost changes drops every entry the kernel holds: a
// notification for each node of the tree it was reading, after which
// every lookup misses.
func (f *feed) publishPaced(changes []Change) {
	// The timer starts at the first wait: the disk watcher publishes
	// each event here, and most find room at once.
	var wait *time.Timer
	late := false
	f.pace.Lock()
	defer f.pace.Unlock()
	for len(changes) > 0 {
		n := min(len(changes), feedQueue/2)
		for !late {
			progress := f.publishRoomy(changes[:n])
			if progress == nil {
				break
			}
			if wait == nil {
				wait = time.NewTimer(paceTimeout)
				defer wait.Stop()
			}
			select {
			case <-progress:
				wait.Reset(paceTimeout)
			case <-wait.C:
				late = true
			}
		}
		if late {
			f.publish(changes[:n]...)
		}
		changes = changes[n:]
	}
}

// paceTimeout bounds how long publishPaced waits for a followed
// subscriber that makes no progress.
const paceTimeout = 2 * time.Second

// publishRoomy publishes changes if every followed subscriber's queue
// has room for them, in one step with the measure (so that two pacing
// publishers, a commit and the disk watcher, cannot both take the same
// room), and returns nil; else it publishes nothing and returns the
// progress channel (see Subscription.Applied) of a subscriber without
// room. The channel is taken before the queue is measured, so progress
// after the measure closes it.
func (f *feed) publishRoomy(changes []Change) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		if !s.followed {
			continue
		}
		s.mu.Lock()
		progress := s.progress
		s.mu.Unlock()
		if len(s.ch)+len(changes) > cap(s.ch) {
			return progress
		}
	}
	f.publishLocked(changes)
	return nil
}

func (f *feed) publish(changes ...Change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.publishLocked(changes)
}

// publishLocked is publish. Must be called with f.mu held.
func (f *feed) publishLocked(changes []Change) {
	f.seq.Add(1)
	for i := range changes {
		changes[i].Source, changes[i].By = changes[i].Source.split()
	}
	for s := range f.subs {
		for _, c := range changes {
			if s.lost.Load() {
				c.Overflow = true
			}
			select {
			case s.ch <- c:
				s.lost.Store(false)
				if s.followed {
					s.mu.Lock()
					s.sent++
					s.mu.Unlock()
				}
			default:
				s.lost.Store(true)
			}
		}
	}
}

// settle waits until every followed subscriber has applied the changes
// queued for it, or timeout passes (false).
func (f *feed) settle(timeout time.Duration) bool {
	f.mu.Lock()
	var subs []*Subscription
	for s := range f.subs {
		if s.followed {
			subs = append(subs, s)
		}
	}
	f.mu.Unlock()
	deadline := time.Now().Add(timeout)
	for _, s := range subs {
		if !s.caughtUp(deadline) {
			return false
		}
	}
	return true
}
