package buffers

// Lock order: buffer.write, then Set.mu, then buffer.mu, then Set.evMu.
// buffer.fill comes before buffer.mu and is never held with buffer.write.

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var (
	// ErrNotOpen: no buffer is open at the path.
	ErrNotOpen = errors.New("buffer not open")
	// ErrResync: the client's text and the buffer's differ (the length it
	// sent does not match); it should send the full text again.
	ErrResync = errors.New("text out of sync: full text needed")
	// ErrBadRange: an edit's range is negative or ends before it starts,
	// or the position encoding is unknown.
	ErrBadRange = errors.New("invalid range")
)

// Snapshot is a buffer's state at one moment.
type Snapshot struct {
	Path    string
	Version int64
	// Text is shared with the Set and other snapshots: never modify it.
	// Getting it again before the next change costs nothing.
	Text []byte
	// Dirty is false right after Save and true after any later change,
	// even one that restores the saved text.
	Dirty    bool
	Modified time.Time // of the last change to Text
}

// Info describes an open buffer in listings.
type Info struct {
	Path    string `json:"path"`
	Version int64  `json:"version"`
	Dirty   bool   `json:"dirty"`
	Size    int64  `json:"size"`
}

// Set is the editor buffers of one workspace, keyed by path. Its methods
// may be called from any number of goroutines.
type Set struct {
	chunking chunking // read only

	mu   sync.RWMutex // mu protects bufs
	bufs map[string]*buffer

	watchMu  sync.Mutex                 // serialises changes to watchers
	watchers atomic.Pointer[[]*watcher] // copy on write, read without locks

	evMu       sync.Mutex // evMu protects queue and delivering
	queue      []queued
	delivering bool
}

// buffer is one open buffer. Changes are serialised by write and
// published under mu, so readers wait only for the publishing, never for
// the work of an edit.
type buffer struct {
	path string // read only

	// write is held by every change for its whole run, so the fields
	// below change only with write held; the work happens with write
	// alone, the result is stored with mu held too.
	write sync.Mutex
	// fill serialises materialising the flat text, so concurrent readers
	// of a changed buffer copy it once.
	fill sync.Mutex

	mu       sync.RWMutex // mu protects the following
	root     *node        // also replaced by an equal rope when flat is filled
	flat     []byte       // root's text once a reader asked for it; nil after a change
	gen      uint64       // counts changes to root's text
	version  int64
	dirty    bool
	modified time.Time
	closed   bool // removed from the Set: changes fail with ErrNotOpen
}

// NewSet returns an empty Set.
func NewSet() *Set { return newSet(defaultChunking) }

func newSet(c chunking) *Set {
	s := &Set{chunking: c, bufs: map[string]*buffer{}}
	s.watchers.Store(&[]*watcher{})
	return s
}

// checkPath accepts workspace-relative, slash-separated, clean paths as
// fs.ValidPath defines them, except "." (the workspace itself).
func checkPath(op, p string) error {
	if !fs.ValidPath(p) || p == "." {
		return fmt.Errorf("buffers: %s %q: not a clean relative path: %w", op, p, fs.ErrInvalid)
	}
	return nil
}

func (s *Set) lookup(op, p string) (*buffer, error) {
	if err := checkPath(op, p); err != nil {
		return nil, err
	}
	s.mu.RLock()
	b := s.bufs[p]
	s.mu.RUnlock()
	if b == nil {
		return nil, fmt.Errorf("buffers: %s %q: %w", op, p, ErrNotOpen)
	}
	return b, nil
}

// Open opens the buffer at path with text, or replaces an open one
// whatever its version. The buffer is dirty. text is copied.
func (s *Set) Open(path string, version int64, text []byte) error {
	if err := checkPath("open", path); err != nil {
		return err
	}
	flat := append([]byte{}, text...)
	root := s.chunking.build(flat) // before any lock: may be megabytes
	for !s.tryOpen(path, version, root, flat) {
	}
	s.deliver()
	return nil
}

// tryOpen stores the text in the buffer at path, adding the buffer if
// there is none. It returns false if it lost a race with another Open or
// a Close of the path, and should be called again.
func (s *Set) tryOpen(path string, version int64, root *node, flat []byte) bool {
	s.mu.RLock()
	b := s.bufs[path]
	s.mu.RUnlock()
	if b == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.bufs[path] != nil {
			return false
		}
		b = &buffer{path: path}
		b.store(root, flat, version)
		s.bufs[path] = b
		s.emit(Event{Path: path, Kind: Opened, Version: version})
		return true
	}
	b.write.Lock()
	defer b.write.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.store(root, flat, version)
	s.emit(Event{Path: path, Kind: Opened, Version: version})
	return true
}

// store sets new text; flat may be nil when not yet materialised. Must be
// called with b.write and b.mu held (or on a buffer not yet shared).
func (b *buffer) store(root *node, flat []byte, version int64) {
	b.root, b.flat, b.version = root, flat, version
	b.gen++
	b.dirty = true
	b.modified = time.Now()
}

// Close closes the buffer at path.
func (s *Set) Close(path string) error {
	for {
		b, err := s.lookup("close", path)
		if err != nil {
			return err
		}
		if s.remove(b) {
			s.deliver()
			return nil
		}
		// b was closed (and maybe reopened) while we waited: look again.
	}
}

// remove takes b out of the Set, reporting false if it already was.
func (s *Set) remove(b *buffer) bool {
	b.write.Lock()
	defer b.write.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bufs[b.path] != b {
		return false
	}
	delete(s.bufs, b.path)
	b.mu.Lock()
	b.closed = true
	s.emit(Event{Path: b.path, Kind: Closed, Version: b.version})
	b.mu.Unlock()
	return true
}

// Get returns the buffer at path, if open. The first Get after a change
// copies the text into one slice (outside the locks that changes need);
// later ones return the same slice.
func (s *Set) Get(path string) (Snapshot, bool) {
	if checkPath("get", path) != nil {
		return Snapshot{}, false
	}
	s.mu.RLock()
	b := s.bufs[path]
	s.mu.RUnlock()
	if b == nil {
		return Snapshot{}, false
	}
	return b.snapshot(), true
}

func (b *buffer) snapshot() Snapshot {
	b.mu.RLock()
	snap := b.snapshotLocked()
	b.mu.RUnlock()
	if snap.Text != nil {
		return snap
	}
	b.fill.Lock()
	defer b.fill.Unlock()
	b.mu.RLock()
	snap = b.snapshotLocked()
	root, gen := b.root, b.gen
	b.mu.RUnlock()
	if snap.Text != nil {
		return snap // filled by the reader we waited for
	}
	// root is immutable: copy without holding mu.
	snap.Text = flatten(root)
	rebased := root
	if root != nil && (root.left != nil || root.right != nil) {
		rebased = rebase(root, snap.Text, 0)
	}
	b.mu.Lock()
	if b.gen == gen {
		b.root, b.flat = rebased, snap.Text
	}
	b.mu.Unlock()
	return snap
}

// snapshotLocked must be called with b.mu held; Text is nil when not
// materialised.
func (b *buffer) snapshotLocked() Snapshot {
	return Snapshot{Path: b.path, Version: b.version, Text: b.flat, Dirty: b.dirty, Modified: b.modified}
}

// List describes the open buffers, sorted by path.
func (s *Set) List() []Info {
	s.mu.RLock()
	infos := make([]Info, 0, len(s.bufs))
	for _, b := range s.bufs {
		b.mu.RLock()
		infos = append(infos, Info{Path: b.path, Version: b.version, Dirty: b.dirty, Size: int64(b.root.size())})
		b.mu.RUnlock()
	}
	s.mu.RUnlock()
	slices.SortFunc(infos, func(a, b Info) int { return strings.Compare(a.Path, b.Path) })
	return infos
}

// Children returns the names directly inside dir ("" is the root) that
// dirty buffers lie at or below, each with whether it is a directory
// (a buffer deeper down) — for listing files that exist only in an
// editor, and the directories they would be created in.
func (s *Set) Children(dir string) map[string]bool {
	prefix := dir + "/"
	if dir == "" {
		prefix = ""
	}
	var out map[string]bool
	s.mu.RLock()
	defer s.mu.RUnlock()
	for p, b := range s.bufs {
		if !strings.HasPrefix(p, prefix) || len(p) == len(prefix) {
			continue
		}
		b.mu.RLock()
		dirty := b.dirty
		b.mu.RUnlock()
		if !dirty {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		name, _, deeper := strings.Cut(p[len(prefix):], "/")
		out[name] = out[name] || deeper
	}
	return out
}
