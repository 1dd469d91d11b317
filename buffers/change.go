package buffers

import "fmt"

// Replace sets the whole text of the open buffer at path (a full-text
// didChange). A version not above the buffer's is stale: ignored, with
// applied false and no error.
func (s *Set) Replace(path string, version int64, text []byte) (applied bool, err error) {
	b, err := s.lookup("replace", path)
	if err != nil {
		return false, err
	}
	b.write.Lock()
	defer s.deliver() // runs after the unlock below
	defer b.write.Unlock()
	if err := b.checkOpen("replace"); err != nil || version <= b.version {
		return false, err
	}
	// Copy and chunk before taking mu: readers are not held up.
	flat := append([]byte{}, text...)
	root := s.chunking.build(flat)
	b.mu.Lock()
	b.store(root, flat, version)
	s.emit(Event{Path: path, Kind: Changed, Version: version})
	b.mu.Unlock()
	return true, nil
}

// Edit applies incremental edits to the open buffer at path, in order,
// each relative to the text the ones before it produced (LSP semantics),
// with positions counted in enc. A version not above the buffer's is
// stale: ignored, with applied false and no error.
//
// length is the byte length the client expects of the result, or < 0 if
// not given; when the result differs, Edit returns an error wrapping
// ErrResync. A range that is negative or ends before it starts gives an
// error wrapping ErrBadRange. On any error the buffer is left unchanged:
// no edit of the batch is applied and the version stays.
func (s *Set) Edit(path string, version int64, enc Encoding, edits []Edit, length int64) (applied bool, err error) {
	b, err := s.lookup("edit", path)
	if err != nil {
		return false, err
	}
	b.write.Lock()
	defer s.deliver() // runs after the unlock below
	defer b.write.Unlock()
	if err := b.checkOpen("edit"); err != nil || version <= b.version {
		return false, err
	}
	b.mu.RLock()
	old := b.root
	b.mu.RUnlock()
	root, err := s.chunking.applyEdits(old, enc, edits)
	if err != nil {
		return false, fmt.Errorf("buffers: edit %q: %w", path, err)
	}
	if length >= 0 && int64(root.size()) != length {
		return false, fmt.Errorf("buffers: edit %q version %d: result is %d bytes, client expects %d: %w",
			path, version, root.size(), length, ErrResync)
	}
	b.mu.Lock()
	if len(edits) == 0 {
		b.version = version // nothing to store: keep the text, its cache and Modified
	} else {
		b.store(root, nil, version)
	}
	s.emit(Event{Path: path, Kind: Changed, Version: version})
	b.mu.Unlock()
	return true, nil
}

// Save records that the editor wrote the buffer at path to disk: it is no
// longer dirty. The text stays, as the base of later incremental edits.
func (s *Set) Save(path string) error {
	b, err := s.lookup("save", path)
	if err != nil {
		return err
	}
	b.write.Lock()
	defer s.deliver() // runs after the unlock below
	defer b.write.Unlock()
	if err := b.checkOpen("save"); err != nil {
		return err
	}
	b.mu.Lock()
	b.dirty = false
	s.emit(Event{Path: path, Kind: Saved, Version: b.version})
	b.mu.Unlock()
	return nil
}

// checkOpen fails if b was closed after it was looked up. Must be called
// with b.write held, which also makes reading b's other fields without mu
// safe: they change only with write held (except root and flat, which a
// reader may swap for equal values under mu).
func (b *buffer) checkOpen(op string) error {
	if b.closed {
		return fmt.Errorf("buffers: %s %q: %w", op, b.path, ErrNotOpen)
	}
	return nil
}
