//go:build linux

package overlay

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// The timeline keeps contents as chunks cut where the content itself
// says (content-defined chunking with a gear hash, as FastCDC and restic
// do), named by their hash and compressed: a file rewritten with a small
// change shares every chunk but the one or two around the change with
// its earlier versions, wherever the change moved the bytes after it.

const (
	chunkMin  = 16 << 10
	chunkMax  = 256 << 10
	chunkMask = 1<<16 - 1 // a cut every 64 KiB on average past chunkMin
)

// gear is the gear hash's table: fixed, so that the same content always
// cuts the same way.
var gear = func() (t [256]uint64) {
	x := uint64(0x9e3779b97f4a7c15)
	for i := range t {
		// splitmix64
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		t[i] = z ^ z>>31
	}
	return t
}()

// cuts returns the ends of b's chunks.
func cuts(b []byte) []int {
	var out []int
	start := 0
	for start < len(b) {
		end := min(start+chunkMax, len(b))
		var fp uint64
		i := start + min(chunkMin, end-start)
		for ; i < end; i++ {
			fp = fp<<1 + gear[b[i]]
			if fp&chunkMask == 0 {
				i++
				break
			}
		}
		out = append(out, i)
		start = i
	}
	return out
}

var flaters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return w
}}

// chunkStore keeps chunks under dir, one file each.
type chunkStore struct {
	dir string
}

func (c *chunkStore) path(h string) string { return filepath.Join(c.dir, h[:2], h) }

// put stores b as chunks and returns their hashes, in order.
func (c *chunkStore) put(b []byte) ([]string, error) {
	var hashes []string
	start := 0
	for _, end := range cuts(b) {
		h, err := c.putChunk(b[start:end])
		if err != nil {
			return nil, err
		}
		hashes = append(hashes, h)
		start = end
	}
	return hashes, nil
}

// putChunk stores one chunk, once.
func (c *chunkStore) putChunk(b []byte) (string, error) {
	sum := sha256.Sum256(b)
	h := hex.EncodeToString(sum[:])
	p := c.path(h)
	if _, err := os.Stat(p); err == nil {
		return h, nil
	}
	var z bytes.Buffer
	w := flaters.Get().(*flate.Writer) // a new one allocates 1 MB
	w.Reset(&z)
	w.Write(b)
	err := w.Close()
	flaters.Put(w)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", err
	}
	if err := writeFileAtomic(p, z.Bytes(), 0o600); err != nil {
		return "", fmt.Errorf("overlay: timeline: keep a chunk: %w", err)
	}
	return h, nil
}

// get returns the content the chunks hashes make. size is its length
// when the caller knows it, else -1: the content is then joined in a
// buffer that doubles as it grows (about three times the content
// allocated).
func (c *chunkStore) get(hashes []string, size int64) ([]byte, error) {
	var out bytes.Buffer
	if size > 0 && size <= int64(len(hashes))*chunkMax {
		// bytes.Buffer.ReadFrom wants MinRead bytes free before each
		// read, the one that sees the end too.
		out.Grow(int(size) + bytes.MinRead)
	}
	for _, h := range hashes {
		if len(h) < 2 {
			return nil, fmt.Errorf("overlay: timeline: bad chunk name %q: %w", h, ErrCorrupt)
		}
		f, err := os.Open(c.path(h))
		if err != nil {
			return nil, fmt.Errorf("overlay: timeline: chunk %s: %w: %w", h, ErrCorrupt, err)
		}
		r := flate.NewReader(f)
		_, err = io.Copy(&out, r)
		r.Close()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("overlay: timeline: chunk %s: %w: %w", h, ErrCorrupt, err)
		}
	}
	return out.Bytes(), nil
}
