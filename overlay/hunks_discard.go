//go:build linux

package overlay

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/draftfs/draftfs/overlay/internal/textmerge"
)

// DiscardHunks drops the hunks ids from the draft: a file all of whose
// hunks are named is discarded whole (mode change included), the others
// are rewritten as what the user has with only their other hunks made,
// and rebased on it. It returns the keys discarded or rewritten.
func (d *Draft) DiscardHunks(ids []string, src Source) ([]string, error) {
	d.commitMu.Lock()
	defer d.commitMu.Unlock()
	files, err := d.hunkFiles(ids)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	ch, err := d.chooseHunksLocked(ids, files)
	if err != nil {
		d.mu.Unlock()
		return nil, err
	}
	var whole []string
	for _, k := range ch.keys {
		if ch.partial[k] == nil {
			whole = append(whole, k)
		}
	}
	t := &txn{}
	for _, k := range sortedKeys(ch.partial) {
		p := ch.partial[k]
		e := d.entries[k]
		if d.writers[e.Ino] > 0 {
			d.mu.Unlock()
			return nil, fmt.Errorf("overlay: discard hunks of %q: a process has it open for writing; close it, or discard the whole file: %w", k, fs.ErrPermission)
		}
		if err := d.replaceData(e.Ino, textmerge.Apply(p.old, p.cur, p.rest)); err != nil {
			d.mu.Unlock()
			return nil, fmt.Errorf("overlay: discard hunks of %q: %w", k, err)
		}
		b, err := d.recordBase(k, true)
		if err != nil {
			d.mu.Unlock()
			return nil, err
		}
		ne := *e
		ne.Base = b
		t.putEntry(k, &ne)
	}
	var publish func()
	if len(ch.partial) > 0 {
		t.addLog(LogEntry{Op: "discard", Paths: sortedKeys(ch.partial), Source: src})
		err = d.finish(t)
	}
	if err == nil && len(whole) > 0 {
		var pw func()
		chosen := d.chooseLocked(whole, false)
		if pw, err = d.dropLocked(sortedKeys(chosen), src); err == nil {
			publish = pw
		}
	}
	if err == nil {
		d.gcLocked(false)
	}
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if publish != nil {
		publish()
	}
	changes := make([]Change, 0, len(ch.partial))
	for _, k := range sortedKeys(ch.partial) {
		changes = append(changes, Change{Draft: d.name, Path: k, Kind: ChangeWrite, Source: src})
	}
	d.w.feed.publish(changes...)
	return ch.keys, nil
}

// replaceData gives the data file of inode ino new content, atomically:
// a file open on the old content keeps it (as after a rename over it),
// and a commit's undo copy, a link of the old file, is untouched. Must
// be called with d.mu held.
func (d *Draft) replaceData(ino uint64, content []byte) error {
	d.touchIno(ino)
	p := d.dataPath(d.dataOf(ino))
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(p), fmt.Sprintf(".hunks-%x", ino))
	if err := os.WriteFile(tmp, content, fi.Mode().Perm()); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
