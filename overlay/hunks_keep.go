//go:build linux

package overlay

import (
	"fmt"
	"io/fs"
	"os"
)

// keptPart is a file a commit took some hunks of.
type keptPart struct {
	// Rest is the kept content (a blob) the draft's file holds after the
	// commit, when that is not its data file's (a 3-way merge); Hash is
	// that content's hash, which undo finds in the draft when nothing
	// changed it since.
	Rest string `json:"rest,omitempty"`
	Hash string `json:"hash"`
	// Mode is the disk file's mode, which the commit keeps: a mode
	// change goes with the file's last hunk.
	Mode fs.FileMode `json:"mode"`
}

// keepPartsLocked records in rec the files it takes some hunks of, and
// gives their write ops the disk's mode. Must be called with d.mu held.
func (d *Draft) keepPartsLocked(rec *commitRecord, parts map[string]*partialFile) error {
	if len(parts) == 0 {
		return nil
	}
	rec.Keep = map[string]*keptPart{}
	for _, k := range sortedKeys(parts) {
		p := parts[k]
		e := rec.Entry[k]
		kp := &keptPart{Hash: hashBytes(p.cur), Mode: d.inodes[e.Ino].Mode}
		if ok, fi := d.diskHas(k); ok {
			kp.Mode = fi.Mode()
		}
		if p.merged {
			if d.writers[e.Ino] > 0 {
				return fmt.Errorf("overlay: commit hunks of %q: you changed it too and a process has it open for writing; close it, or commit the whole file: %w", k, fs.ErrPermission)
			}
			kp.Rest = kp.Hash
			if err := d.keepBlob(kp.Rest, p.cur); err != nil {
				return fmt.Errorf("overlay: commit hunks of %q: %w", k, err)
			}
		}
		rec.Keep[k] = kp
	}
	for i := range rec.Ops {
		if op := &rec.Ops[i]; op.Kind == opWrite && rec.Keep[op.Path] != nil {
			op.Mode = rec.Keep[op.Path].Mode
		}
	}
	return nil
}

// rebaseLocked is the entry a file a commit took some hunks of keeps in
// the draft: its base what the commit wrote, its content what the diff
// showed. Run again after a crash, it does the same. Must be called with
// d.mu held.
func (d *Draft) rebaseLocked(key string, e *entry, kp *keptPart) (*entry, error) {
	if kp.Rest != "" {
		content, err := d.readBlob(kp.Rest)
		if err != nil {
			return nil, err
		}
		if err := d.replaceData(e.Ino, content); err != nil {
			return nil, fmt.Errorf("overlay: commit: rebase %q: %w", key, err)
		}
	}
	b, err := d.recordBase(key, true)
	if err != nil {
		return nil, err
	}
	ne := *e
	ne.Base = b
	return &ne, nil
}

// keptAsLeftLocked reports whether the draft holds key as the commit rec
// of some of its hunks left it: undo then puts the whole change back.
// Must be called with d.mu held.
func (d *Draft) keptAsLeftLocked(rec *commitRecord, key string) bool {
	kp, e := rec.Keep[key], d.entries[key]
	if kp == nil || e == nil || rec.Entry[key] == nil || e.Ino != rec.Entry[key].Ino {
		return false
	}
	b, err := os.ReadFile(d.dataPath(d.dataOf(e.Ino)))
	return err == nil && hashBytes(b) == kp.Hash
}
