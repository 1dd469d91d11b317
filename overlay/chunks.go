//go:build linux

package overlay

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"
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

var inflaters = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}

// chunkStore keeps chunks in a bbolt database (chunks.db), compressed
// and keyed by their hash: a checkpoint adds its new chunks in one
// transaction, where a file each cost a file creation per new chunk
// (and every file an agent creates is a new chunk). Chunks of earlier
// versions, a file each under dir, are still read, and removed when no
// kept checkpoint uses them.
//
// The database runs with NoSync, as the draft's does (see
// "Persistence" in doc.go): a killed process loses nothing it wrote.
// Accessed with the timeline's lock held.
type chunkStore struct {
	dir      string // read only: the chunks of earlier versions
	path     string // read only: the database
	readOnly bool   // read only
	files    bool   // dir exists
	db       *bolt.DB
	// pending are the chunks put in the batch under way, compressed,
	// by name, and read its read transaction (see batch).
	pending map[string][]byte
	read    *bolt.Tx
	// flater compresses the batch's chunks. One for the whole batch: a
	// new one allocates 1 MB, and a pool of them, emptied at each
	// collection, made one for nearly every chunk of a checkpoint that
	// read many new files (a collection each few chunks then).
	flater *flate.Writer
}

var bucketChunks = []byte("chunks")

func newChunkStore(dir string, readOnly bool) *chunkStore {
	return &chunkStore{dir: filepath.Join(dir, "chunks"), path: filepath.Join(dir, "chunks.db"), readOnly: readOnly}
}

// open opens the database at first use; read only and missing, there
// is none (every chunk is a file then).
func (c *chunkStore) open() error {
	if c.db != nil {
		return nil
	}
	if _, err := os.Stat(c.dir); err == nil {
		c.files = true
	}
	if c.readOnly {
		if _, err := os.Lstat(c.path); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	} else if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return err
	}
	db, err := openBolt(c.path, c.readOnly) // its path names the timeline
	c.db = db
	return err
}

func (c *chunkStore) close() error {
	if c.db == nil {
		return nil
	}
	err := c.db.Close()
	c.db = nil
	return err
}

// batch runs fn, and stores the chunks fn puts together when it
// returns without an error (in one transaction, in the order of their
// names: bbolt inserts keys in order without moving the others), and
// none otherwise.
func (c *chunkStore) batch(fn func() error) error {
	if err := c.open(); err != nil {
		return err
	}
	if c.db == nil {
		return fmt.Errorf("overlay: timeline: %s: %w", c.path, fs.ErrPermission) // read only
	}
	c.pending = map[string][]byte{}
	defer func() { c.pending, c.flater = nil, nil }()
	err := safe(func() error {
		tx, err := c.db.Begin(false)
		if err != nil {
			return err
		}
		c.read = tx
		defer func() {
			c.read = nil
			tx.Rollback()
		}()
		return fn()
	})
	if err != nil {
		return err
	}
	return c.update(func(bucket *bolt.Bucket) error {
		for _, h := range slices.Sorted(maps.Keys(c.pending)) {
			if err := bucket.Put([]byte(h), c.pending[h]); err != nil {
				return fmt.Errorf("overlay: timeline: keep chunks: %w", err)
			}
		}
		return nil
	})
}

// update runs fn in a write transaction with the chunks' bucket.
func (c *chunkStore) update(fn func(*bolt.Bucket) error) error {
	return safe(func() error {
		return c.db.Update(func(tx *bolt.Tx) error {
			bucket, err := tx.CreateBucketIfNotExists(bucketChunks)
			if err != nil {
				return err
			}
			return fn(bucket)
		})
	})
}

// put stores b as chunks and returns their hashes, in order. Must be
// called within batch.
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
	if c.pending[h] != nil {
		return h, nil
	}
	var have bool
	err := c.view(func(bucket *bolt.Bucket) error {
		have = bucketGet(bucket, h) != nil
		return nil
	})
	if err != nil || have {
		return h, err
	}
	if c.files {
		if _, err := os.Stat(c.filePath(h)); err == nil {
			return h, nil // kept as a file by an earlier version
		}
	}
	var z bytes.Buffer
	if c.flater == nil {
		c.flater, _ = flate.NewWriter(&z, flate.BestSpeed) // no error at this level
	} else {
		c.flater.Reset(&z)
	}
	c.flater.Write(b)
	if err := c.flater.Close(); err != nil {
		return "", err
	}
	c.pending[h] = z.Bytes()
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
	err := c.view(func(bucket *bolt.Bucket) error {
		for _, h := range hashes {
			if err := c.getChunk(bucket, h, &out); err != nil {
				return fmt.Errorf("overlay: timeline: chunk %s: %w: %w", h, ErrCorrupt, err)
			}
		}
		return nil
	})
	return out.Bytes(), err
}

// view runs fn with the chunks' bucket (nil when there is none).
func (c *chunkStore) view(fn func(*bolt.Bucket) error) error {
	if c.read != nil {
		return fn(c.read.Bucket(bucketChunks))
	}
	if err := c.open(); err != nil {
		return err
	}
	if c.db == nil {
		return fn(nil)
	}
	return safe(func() error {
		return c.db.View(func(tx *bolt.Tx) error { return fn(tx.Bucket(bucketChunks)) })
	})
}

// getChunk appends the chunk named h to out.
func (c *chunkStore) getChunk(bucket *bolt.Bucket, h string, out *bytes.Buffer) error {
	var z io.Reader
	if v := c.pending[h]; v != nil {
		z = bytes.NewReader(v)
	} else if v := bucketGet(bucket, h); v != nil {
		z = bytes.NewReader(v)
	} else {
		if len(h) < 2 {
			return errors.New("bad chunk name")
		}
		f, err := os.Open(c.filePath(h))
		if err != nil {
			return err
		}
		defer f.Close()
		z = f
	}
	r := inflaters.Get().(io.ReadCloser) // a new one allocates 40 KB
	defer inflaters.Put(r)
	if err := r.(flate.Resetter).Reset(z, nil); err != nil {
		return err
	}
	_, err := io.Copy(out, r)
	return err
}

func bucketGet(b *bolt.Bucket, h string) []byte {
	if b == nil {
		return nil
	}
	return b.Get([]byte(h))
}

// filePath is where an earlier version kept the chunk named h.
func (c *chunkStore) filePath(h string) string { return filepath.Join(c.dir, h[:2], h) }

// remove removes the chunks named in gone.
func (c *chunkStore) remove(gone map[string]bool) error {
	if len(gone) == 0 {
		return nil
	}
	if dirs, _ := os.ReadDir(c.dir); len(dirs) > 0 {
		for h := range gone {
			if len(h) >= 2 {
				os.Remove(c.filePath(h))
			}
		}
	}
	if err := c.open(); err != nil || c.db == nil {
		return err
	}
	return c.update(func(bucket *bolt.Bucket) error {
		for h := range gone {
			if err := bucket.Delete([]byte(h)); err != nil {
				return err
			}
		}
		return nil
	})
}

// keepOnly removes the chunks not in used.
func (c *chunkStore) keepOnly(used map[string]bool) error {
	gone := map[string]bool{}
	dirs, _ := os.ReadDir(c.dir)
	for _, sub := range dirs {
		ents, _ := os.ReadDir(filepath.Join(c.dir, sub.Name()))
		for _, e := range ents {
			if !used[e.Name()] {
				gone[e.Name()] = true
			}
		}
	}
	err := c.view(func(bucket *bolt.Bucket) error {
		if bucket == nil {
			return nil
		}
		return bucket.ForEach(func(k, _ []byte) error {
			if !used[string(k)] {
				gone[string(k)] = true
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	return c.remove(gone)
}
