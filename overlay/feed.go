package overlay

import (
	"sync"
	"sync/atomic"
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
}

// Close stops the subscription; C is closed.
func (s *Subscription) Close() { s.f.unsubscribe(s) }

// feed fans changes out to subscribers without ever blocking publishers.
type feed struct {
	mu   sync.Mutex // protects subs and sending on their channels
	subs map[*Subscription]struct{}
}

func (f *feed) subscribe() *Subscription {
	ch := make(chan Change, feedQueue)
	s := &Subscription{C: ch, ch: ch, f: f}
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
	}
}

func (f *feed) publish(changes ...Change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		for _, c := range changes {
			if s.lost.Load() {
				c.Overflow = true
			}
			select {
			case s.ch <- c:
				s.lost.Store(false)
			default:
				s.lost.Store(true)
			}
		}
	}
}
