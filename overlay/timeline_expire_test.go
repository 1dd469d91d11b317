//go:build linux

package overlay

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"slices"
	"testing"

	"github.com/spf13/afero"
	bolt "go.etcd.io/bbolt"
)

// storedChunks are the names of the chunks tl's store holds.
func storedChunks(t *testing.T, tl *timeline) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	must(t, tl.chunks.view(func(b *bolt.Bucket) error {
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			out[string(k)] = true
			return nil
		})
	}))
	return out
}

// usedChunks are the chunks the kept checkpoints of tl use, read from
// their states, and those tl.known names.
func usedChunks(t *testing.T, tl *timeline) map[string]bool {
	t.Helper()
	ids, err := tl.ids()
	must(t, err)
	out := map[string]bool{}
	for _, id := range ids {
		cp, err := tl.read(id)
		must(t, err)
		st, err := tl.state(cp)
		must(t, err)
		for _, h := range cp.State {
			out[h] = true
		}
		forEachChunk(st, func(h string) { out[h] = true })
	}
	for _, cd := range tl.known {
		for _, h := range cd.Chunks {
			out[h] = true
		}
	}
	return out
}

// checkStore fails the test unless tl's store holds exactly the chunks
// its kept checkpoints use; when says after what.
func checkStore(t *testing.T, tl *timeline, when string) {
	t.Helper()
	stored, used := storedChunks(t, tl), usedChunks(t, tl)
	for h := range used {
		if !stored[h] {
			t.Fatalf("%s: chunk %s, which a kept checkpoint uses, is gone", when, h)
		}
	}
	for h := range stored {
		if !used[h] {
			t.Fatalf("%s: chunk %s is kept, which no kept checkpoint uses", when, h)
		}
	}
}

// versions is a draft that keeps keep checkpoints; its checkpoint(i)
// writes version i of file f and makes a checkpoint.
type versions struct {
	t *testing.T
	d *Draft
	f afero.Fs
}

func newVersions(t *testing.T, keep int) *versions {
	w, err := Open(Options{Root: t.TempDir(), StateDir: t.TempDir()})
	must(t, err)
	t.Cleanup(func() { w.Close() })
	d, _ := w.Draft("")
	d.tl.keep = keep
	return &versions{t: t, d: d, f: d.Fs(SourceMount)}
}

func (v *versions) checkpoint(i int) *Checkpoint {
	v.t.Helper()
	must(v.t, afero.WriteFile(v.f, "f", fmt.Appendf(nil, "version %d\n", i), 0o644))
	cp, err := v.d.Checkpoint(Author{Source: SourceMount}, "")
	must(v.t, err)
	return cp
}

// expire runs an expiry of d's timeline.
func expire(d *Draft) {
	d.tl.mu.Lock()
	defer d.tl.mu.Unlock()
	d.tl.expireLocked()
}

// rewriteCheckpoint changes checkpoint id's file as edit says.
func rewriteCheckpoint(t *testing.T, tl *timeline, id uint64, edit func(*Checkpoint)) {
	t.Helper()
	cp, err := tl.read(id)
	must(t, err)
	edit(cp)
	b, err := json.Marshal(cp)
	must(t, err)
	must(t, os.WriteFile(tl.cpPath(id), b, 0o600))
}

// TestTimelineExpiryKeepsUsedChunks: after each expiry the store holds
// exactly the chunks the kept checkpoints use (none lost, none left
// over), through random edits of draft and workspace files whose
// contents repeat (chunks shared between files, and used again after
// they were dropped), rewinds, and the draft opened again; and a rewind
// to any kept checkpoint gives back the view it recorded.
func TestTimelineExpiryKeepsUsedChunks(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	cmWrite(t, root, map[string]string{"a": "disk a\n", "d/b": "disk b\n"})
	w, err := Open(Options{Root: root, StateDir: state})
	must(t, err)
	defer func() { w.Close() }()
	d, _ := w.Draft("")
	d.tl.keep = 3
	f := d.Fs(SourceMount)
	r := rand.New(rand.NewSource(1))
	names := []string{"a", "d/b", "n1", "n2", "d/n3", "n4"}
	contents := []string{"one\n", "two\n", "three\n", "four\n"}
	snaps := map[uint64]map[string]string{}
	blobs := 0
	for i := range 150 {
		switch {
		case i%50 == 49: // as a restarted daemon
			must(t, w.Close())
			w, err = Open(Options{Root: root, StateDir: state})
			must(t, err)
			d, _ = w.Draft("")
			d.tl.keep = 3
			f = d.Fs(SourceMount)
		case i%7 == 6 && len(snaps) > 0:
			ids := slices.Sorted(maps.Keys(snaps))
			id := ids[r.Intn(len(ids))]
			if _, err := d.Rewind(id, Author{Source: SourceCLI}); err != nil {
				t.Fatalf("step %d: rewind to %d: %v", i, id, err)
			}
			if diff := diffSnapshots(snaps[id], viewSnapshot(t, f)); diff != "" {
				t.Fatalf("step %d: after rewinding to %d:\n%s", i, id, diff)
			}
		default:
			for range 1 + r.Intn(3) {
				p := names[r.Intn(len(names))]
				switch r.Intn(6) {
				case 0:
					f.Remove(p)
				case 1: // a workspace file's kept base goes with its entry
					_, err := d.Discard([]string{p}, SourceCLI)
					must(t, err)
				default:
					must(t, afero.WriteFile(f, p, []byte(contents[r.Intn(len(contents))]), 0o644))
				}
			}
		}
		cp, err := d.Checkpoint(Author{Source: SourceMount}, "")
		must(t, err)
		if cp == nil {
			continue
		}
		snaps[cp.ID] = viewSnapshot(t, f)
		if st, _ := d.tl.lastState(); len(st.Blobs) > 0 {
			blobs++
		}
		if r.Intn(3) == 0 {
			clear(d.tl.known) // as a failed checkpoint leaves it
		}
		expire(d)
		ids, err := d.tl.ids()
		must(t, err)
		for id := range snaps {
			if !slices.Contains(ids, id) {
				delete(snaps, id)
			}
		}
		checkStore(t, d.tl, fmt.Sprintf("step %d (checkpoint %d)", i, cp.ID))
	}
	if blobs == 0 {
		t.Error("no checkpoint had kept bases: the test did not cover them")
	}
}

// TestTimelineExpiryOfOlderCheckpoints: checkpoints written before they
// listed the chunks they dropped expire as before, by the kept states,
// until none is kept; then expiry goes by the lists and still leaves the
// store holding exactly what the kept ones use.
func TestTimelineExpiryOfOlderCheckpoints(t *testing.T) {
	v := newVersions(t, 2)
	for i := range 5 {
		v.checkpoint(i)
	}
	ids, err := v.d.tl.ids()
	must(t, err)
	for _, id := range ids { // as an earlier version wrote them
		rewriteCheckpoint(t, v.d.tl, id, func(cp *Checkpoint) { cp.Dropped, cp.Drops = nil, false })
	}
	for i := 5; i < 12; i++ {
		v.checkpoint(i)
		expire(v.d)
		checkStore(t, v.d.tl, fmt.Sprintf("after checkpoint %d", i+1))
	}
}

// TestTimelineExpiryReadsNoState: expiry does not read the kept
// checkpoints' states (each a decoding of the whole draft's records, a
// thousand of them at TimelineKeep): with the oldest kept one's state
// lost, the chunks no kept checkpoint uses still go.
func TestTimelineExpiryReadsNoState(t *testing.T) {
	v := newVersions(t, 3)
	for i := range 6 {
		v.checkpoint(i)
	}
	ids, err := v.d.tl.ids()
	must(t, err)
	oldestKept, err := v.d.tl.read(ids[len(ids)-3])
	must(t, err)
	must(t, v.d.tl.chunks.remove(map[string]bool{oldestKept.State[0]: true}))
	before := len(storedChunks(t, v.d.tl))
	expire(v.d)
	// Three checkpoints went, each with its state and its version of f.
	if after := len(storedChunks(t, v.d.tl)); after != before-6 {
		t.Errorf("%d chunks before expiry, %d after; want %d", before, after, before-6)
	}
}

// TestTimelineExpiryKeepsTheLastState: Dropped may list chunks the
// checkpoint still uses (a state's own chunks are listed whole, a file's
// whenever its record is new), and an older one's may name chunks the
// last state uses again: expiry keeps those.
func TestTimelineExpiryKeepsTheLastState(t *testing.T) {
	v := newVersions(t, 2)
	var last *Checkpoint
	for i := range 3 {
		last = v.checkpoint(i)
	}
	lastState, err := v.d.tl.state(last)
	must(t, err)
	ids, err := v.d.tl.ids()
	must(t, err)
	// The oldest kept checkpoint lists the last one's chunks as dropped.
	rewriteCheckpoint(t, v.d.tl, ids[len(ids)-2], func(cp *Checkpoint) {
		cp.Dropped = slices.Concat(cp.Dropped, last.State)
		forEachChunk(lastState, func(h string) { cp.Dropped = append(cp.Dropped, h) })
	})
	clear(v.d.tl.known) // what it names must not be what keeps them
	expire(v.d)
	checkStore(t, v.d.tl, "after expiry")
}
