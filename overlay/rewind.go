//go:build linux

package overlay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// A rewind puts the draft back as it was right after a checkpoint, and
// is journaled so that a crash leaves the draft either as it was or as
// the checkpoint left it:
//
//  1. the present is recorded as a checkpoint, if it is not one yet, so
//     a rewind can itself be rewound;
//  2. the data files the checkpoint needs are made beside the live ones
//     (data/.rw-INO: a link of the live file when its content is the
//     same, else written from the chunk store), and missing kept bases
//     put back; a crash here leaves only these, which the next open
//     removes;
//  3. the journal (timeline/rewind.json) is written and synced: from
//     here on the next open finishes the rewind;
//  4. each .rw-INO is renamed over its data file, the entries and
//     inodes are replaced in one transaction, the journal removed, and
//     the new state recorded as a checkpoint that says it rewound.
//
// Every step of 4 can run again after a crash.

// rewindJournal is a rewind under way.
type rewindJournal struct {
	Target uint64 `json:"target"`
	Author Author `json:"author"`
}

func (tl *timeline) journalPath() string { return filepath.Join(tl.dir, "rewind.json") }

func rwName(ino uint64) string { return ".rw-" + dataName(ino) }

// testHookRewind, when set by a test, runs between the steps of a
// rewind (its argument names the step).
var testHookRewind func(step string)

// Rewind puts the draft back exactly as it was right after checkpoint
// id: every file, deletion, rename, mode and content. It returns the
// checkpoint that records the rewind. A file open for writing refuses
// it (fs.ErrPermission): what is written through it would be lost.
func (d *Draft) Rewind(id uint64, a Author) (*Checkpoint, error) {
	d.commitMu.Lock()
	defer d.commitMu.Unlock()
	tl := d.tl
	tl.mu.Lock()
	defer tl.mu.Unlock()
	cp, err := tl.read(id)
	if err != nil {
		return nil, err
	}
	target, err := tl.state(cp)
	if err != nil {
		return nil, err
	}
	d.mu.RLock()
	busy := 0
	for _, n := range d.writers {
		busy += n
	}
	d.mu.RUnlock()
	if busy > 0 {
		return nil, fmt.Errorf("overlay: rewind draft %s: %d file(s) open for writing in it; close them (stop the agent) first: %w", d.name, busy, fs.ErrPermission)
	}
	if _, err := tl.checkpointLocked(a, "", 0); err != nil {
		return nil, err
	}
	if err := tl.stage(target); err != nil {
		return nil, fmt.Errorf("overlay: rewind draft %s to %d: %w", d.name, id, err)
	}
	hook("staged")
	j, err := json.Marshal(rewindJournal{Target: id, Author: a})
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(tl.journalPath(), j, 0o600); err != nil {
		return nil, fmt.Errorf("overlay: rewind draft %s to %d: %w", d.name, id, err)
	}
	if err := syncDir(tl.dir); err != nil {
		return nil, err
	}
	hook("journaled")
	return tl.finishRewindLocked(id, target, a)
}

func hook(step string) {
	if testHookRewind != nil {
		testHookRewind(step)
	}
}

// stage makes the data files and kept bases target needs beside the
// live ones.
func (tl *timeline) stage(target *cpState) error {
	d := tl.d
	for ino, cd := range target.Data {
		tmp := filepath.Join(d.dir, "data", rwName(ino))
		os.Remove(tmp)
		d.mu.RLock()
		name := d.dataOf(ino)
		d.mu.RUnlock()
		if cur, _, err := tl.content(ino, name); err == nil && cur.Hash == cd.Hash {
			if err := os.Link(d.dataPath(name), tmp); err != nil {
				return err
			}
		} else {
			b, err := tl.chunks.get(cd.Chunks, cd.Size)
			if err != nil {
				return err
			}
			if err := os.WriteFile(tmp, b, 0o600); err != nil {
				return err
			}
		}
		mt := time.Unix(0, cd.Mtime)
		if err := os.Chtimes(tmp, mt, mt); err != nil {
			return err
		}
	}
	for h, chunks := range target.Blobs {
		if _, err := os.Stat(d.blobPath(h)); err == nil {
			continue
		}
		b, err := tl.chunks.get(chunks, -1)
		if err != nil {
			return err
		}
		if err := d.keepBlob(h, b); err != nil {
			return err
		}
	}
	return nil
}

// finishRewindLocked does step 4. Must be called with tl.mu held.
func (tl *timeline) finishRewindLocked(id uint64, target *cpState, a Author) (*Checkpoint, error) {
	d := tl.d
	for ino := range target.Data {
		err := os.Rename(filepath.Join(d.dir, "data", rwName(ino)), d.dataPath(dataName(ino)))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("overlay: rewind draft %s to %d: %w", d.name, id, err)
		}
		delete(tl.known, ino)
	}
	tl.prev, tl.seeded = nil, true // every data file the target has changed
	hook("renamed")
	d.mu.Lock()
	t := &txn{reserved: true}
	var keys []string
	for k := range d.entries {
		if _, ok := target.Entries[k]; !ok {
			t.putEntry(k, nil)
			keys = append(keys, k)
		}
	}
	for k, e := range target.Entries {
		t.putEntry(k, e)
		keys = append(keys, k)
	}
	for ino, n := range target.Inodes {
		t.putInode(ino, byNumber(n))
	}
	if target.NextIno > d.nextIno {
		t.nextIno = target.NextIno
	}
	t.addLog(LogEntry{Op: "rewind", Paths: sortedKeys(t.entries), Source: a.Source})
	err := d.finish(t)
	if err == nil {
		err = d.st.sync()
	}
	d.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("overlay: rewind draft %s to %d: %w", d.name, id, err)
	}
	// Every path may have changed: the views drop all they cache.
	d.w.feed.publish(Change{Draft: d.name, Kind: ChangeDiscard, Source: a.Source, Overflow: true})
	if err := os.Remove(tl.journalPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	hook("done")
	return tl.checkpointLocked(a, fmt.Sprintf("rewind to %d", id), id)
}

// recoverRewind finishes a rewind a crash interrupted after its
// journal was written.
func (d *Draft) recoverRewind() error {
	b, err := os.ReadFile(d.tl.journalPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var j rewindJournal
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("overlay: draft %s: %s: %w: %w", d.name, d.tl.journalPath(), ErrCorrupt, err)
	}
	tl := d.tl
	tl.mu.Lock()
	defer tl.mu.Unlock()
	cp, err := tl.read(j.Target)
	if err != nil {
		return err
	}
	target, err := tl.state(cp)
	if err != nil {
		return err
	}
	_, err = tl.finishRewindLocked(j.Target, target, j.Author)
	return err
}

// syncDir makes the names in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
