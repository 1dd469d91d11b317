//go:build linux

package overlay

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Joining a file's chunks again allocates the file's size once when the
// size is known, where a growing buffer took 3.4 times it (31 MB for a
// 9 MB write's checkpoint); the lines a new file adds are counted from
// it (statChunks) the same way.
func TestChunksGetAllocates(t *testing.T) {
	if raceBuild {
		t.Skip("allocations under the race detector are not the program's")
	}
	var b bytes.Buffer
	for i := 0; b.Len() < 9<<20; i++ {
		fmt.Fprintf(&b, "line %d of a file large enough to take many chunks\n", i)
	}
	content := b.Bytes()
	tl := &timeline{chunks: newChunkStore(t.TempDir(), false)}
	defer tl.chunks.close()
	var hashes []string
	err := tl.chunks.batch(func() (err error) {
		hashes, err = tl.chunks.put(content)
		return err
	})
	must(t, err)
	if len(hashes) < 10 {
		t.Fatalf("only %d chunks", len(hashes))
	}
	allocated := func(fn func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		fn()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	var got []byte
	n := allocated(func() { got, err = tl.chunks.get(hashes, int64(len(content))) })
	must(t, err)
	if !bytes.Equal(got, content) {
		t.Fatalf("got %d bytes back, not the %d put", len(got), len(content))
	}
	// flate's readers take some too: 50 KiB a chunk at most.
	if most := uint64(len(content)) + uint64(len(hashes))*50<<10; n > most {
		t.Errorf("get of %d MiB allocated %d MiB, over %d MiB", len(content)>>20, n>>20, most>>20)
	}
	var added int
	n = allocated(func() { added, _ = tl.statChunks(nil, hashes, 0, int64(len(content))) })
	if want := bytes.Count(content, []byte("\n")); added != want {
		t.Errorf("statChunks counted %d lines added, not %d", added, want)
	}
	// Counting takes about the file's size again (textmerge); the
	// joining 3.4 times it before.
	if most := 3 * uint64(len(content)); n > most {
		t.Errorf("statChunks of a new %d MiB file allocated %d MiB, over %d MiB", len(content)>>20, n>>20, most>>20)
	}
}

// TestChunksEarlierFiles: chunks an earlier version kept as files are
// read, not stored again, and removed with the database's when no kept
// checkpoint uses them.
func TestChunksEarlierFiles(t *testing.T) {
	dir := t.TempDir()
	c := newChunkStore(dir, false)
	defer c.close()
	old := []byte("kept by an earlier version\n")
	var z bytes.Buffer
	w, _ := flate.NewWriter(&z, flate.BestSpeed)
	w.Write(old)
	w.Close()
	h := hashBytes(old)
	must(t, os.MkdirAll(filepath.Dir(c.filePath(h)), 0o700))
	must(t, os.WriteFile(c.filePath(h), z.Bytes(), 0o600))

	var hashes, fresh []string
	must(t, c.batch(func() (err error) {
		if hashes, err = c.put(old); err != nil {
			return err
		}
		fresh, err = c.put([]byte("new\n"))
		return err
	}))
	if len(hashes) != 1 || hashes[0] != h || len(c.pending) != 0 {
		t.Fatalf("put of an earlier chunk: %v", hashes)
	}
	for _, want := range []string{string(old), "new\n"} {
		hs := hashes
		if want == "new\n" {
			hs = fresh
		}
		got, err := c.get(hs, -1)
		must(t, err)
		if string(got) != want {
			t.Errorf("get: %q, want %q", got, want)
		}
	}
	var inDB int
	must(t, c.view(func(b *bolt.Bucket) error {
		inDB = b.Stats().KeyN
		return nil
	}))
	if inDB != 1 {
		t.Errorf("%d chunks in the database, want the new one only", inDB)
	}

	must(t, c.keepOnly(map[string]bool{}))
	if _, err := os.Stat(c.filePath(h)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the earlier chunk's file is still there: %v", err)
	}
	if _, err := c.get(fresh, -1); !errors.Is(err, ErrCorrupt) {
		t.Errorf("get of a removed chunk: %v", err)
	}
}
