//go:build linux

package overlay

// Discard drops the draft's changes below keys (nil: all of them), with
// their rename partners: the merged view falls back to buffers and disk.
// It returns the keys dropped.
func (d *Draft) Discard(keys []string, src Source) ([]string, error) {
	d.commitMu.Lock()
	defer d.commitMu.Unlock()
	d.mu.Lock()
	chosen := d.chooseLocked(keys, false)
	dropped := sortedKeys(chosen)
	if len(dropped) == 0 {
		d.mu.Unlock()
		return dropped, nil
	}
	publish, err := d.dropLocked(dropped, src)
	if err == nil {
		d.gcLocked(false) // the bases of what was dropped
	}
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	publish()
	return dropped, nil
}

// dropLocked removes the entries at keys, logged as a discard, and
// returns what tells the views, to call once d.mu is released. Must be
// called with d.mu held.
func (d *Draft) dropLocked(keys []string, src Source) (publish func(), err error) {
	// Discarding frees space: on a full state disk it may use the
	// space kept for that.
	t := &txn{reserved: true}
	for _, k := range keys {
		t.putEntry(k, nil)
	}
	t.addLog(LogEntry{Op: "discard", Paths: keys, Source: src})
	if err := d.finish(t); err != nil {
		return nil, err
	}
	return func() {
		changes := make([]Change, 0, len(keys))
		for _, k := range keys {
			changes = append(changes, Change{Draft: d.name, Path: k, Kind: ChangeDiscard, Source: src})
		}
		d.w.feed.publishPaced(changes)
	}, nil
}

// Log returns the draft's history, oldest first.
func (d *Draft) Log() ([]LogEntry, error) { return d.st.readLog() }
