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
	t := &txn{}
	for _, k := range dropped {
		t.putEntry(k, nil)
	}
	t.addLog(LogEntry{Op: "discard", Paths: dropped, Source: src})
	err := d.finish(t)
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	changes := make([]Change, 0, len(dropped))
	for _, k := range dropped {
		changes = append(changes, Change{Draft: d.name, Path: k, Kind: ChangeDiscard, Source: src})
	}
	d.w.feed.publish(changes...)
	return dropped, nil
}

// Log returns the draft's history, oldest first.
func (d *Draft) Log() ([]LogEntry, error) { return d.st.readLog() }
