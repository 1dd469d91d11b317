//go:build linux

package overlay

import (
	"encoding/json"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// stateEncoder writes a cpState as json.Marshal does, keeping each
// entry's, inode's and data record's encoding for the next state: states
// captured one after the other share the records that did not change
// (see timeline.capture), and those cost a copy instead of an encoding.
// The states' records are never changed in place.
type stateEncoder struct {
	entries recordCache[string, *entry]
	inodes  recordCache[uint64, *inode]
	data    recordCache[uint64, *cpData]
}

func (e *stateEncoder) encode(st *cpState) ([]byte, error) {
	out := make([]byte, 0, e.entries.size+e.inodes.size+e.data.size+1<<10)
	out = append(out, `{"entries":`...)
	out, err := e.entries.append(out, st.Entries, func(k string) string { return k })
	if err != nil {
		return nil, err
	}
	out = append(out, `,"inodes":`...)
	if out, err = e.inodes.append(out, st.Inodes, formatIno); err != nil {
		return nil, err
	}
	if len(st.Data) > 0 {
		out = append(out, `,"data":`...)
		if out, err = e.data.append(out, st.Data, formatIno); err != nil {
			return nil, err
		}
	}
	if len(st.Blobs) > 0 {
		b, err := json.Marshal(st.Blobs)
		if err != nil {
			return nil, err
		}
		out = append(append(out, `,"blobs":`...), b...)
	}
	out = strconv.AppendUint(append(out, `,"nextIno":`...), st.NextIno, 10)
	return append(out, '}'), nil
}

func formatIno(ino uint64) string { return strconv.FormatUint(ino, 10) }

// yieldEvery is how many records an encoding goes through between
// yields of the processor: a checkpoint runs while the draft is quiet,
// but a request that comes meanwhile should not wait for the whole of a
// large draft's encoding (the daemon has one P; without a yield Go
// preempts the encoding only after 10 ms).
const yieldEvery = 1024

// yieldAt yields the processor at every yieldEvery'th record n.
func yieldAt(n int) {
	if n%yieldEvery == 0 {
		runtime.Gosched()
	}
}

// recordCache keeps the encodings of a map's members, in the order
// json.Marshal writes them (by the key's text).
type recordCache[K comparable, V comparable] struct {
	enc map[K]*record[K, V]
	// sorted are enc's records in order: the encoding walks them, not
	// the map (a lookup each was most of a large draft's encoding).
	sorted []*record[K, V]
	size   int // of the last encoding
}

// record is a member's key, value and encoding, `"key":value`.
type record[K, V any] struct {
	k    K
	v    V
	name string // the key's text
	b    []byte
}

// append appends m's JSON to out, as json.Marshal writes it; name gives
// a key's text.
func (c *recordCache[K, V]) append(out []byte, m map[K]V, name func(K) string) ([]byte, error) {
	if m == nil {
		return append(out, "null"...), nil
	}
	if c.enc == nil {
		c.enc = map[K]*record[K, V]{}
	}
	var added []*record[K, V]
	n := 0
	for k, v := range m {
		n++
		yieldAt(n)
		r := c.enc[k]
		if r != nil && r.v == v {
			continue
		}
		if r == nil {
			r = &record[K, V]{k: k, name: name(k)}
			added = append(added, r)
			c.enc[k] = r
		}
		kb, err := json.Marshal(r.name)
		if err != nil {
			return nil, err
		}
		vb, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		r.v, r.b = v, append(append(kb, ':'), vb...)
	}
	if len(c.enc) != len(m) {
		for k := range c.enc {
			if _, ok := m[k]; !ok {
				delete(c.enc, k)
			}
		}
		c.sorted = slices.DeleteFunc(c.sorted, func(r *record[K, V]) bool {
			_, ok := m[r.k]
			return !ok
		})
	}
	if len(added) > 0 {
		c.sorted = c.merge(added)
	}
	start := len(out)
	out = append(out, '{')
	for i, r := range c.sorted {
		if i > 0 {
			out = append(out, ',')
			yieldAt(i)
		}
		out = append(out, r.b...)
	}
	out = append(out, '}')
	c.size = len(out) - start
	return out, nil
}

// merge returns c.sorted with the records added, in order.
func (c *recordCache[K, V]) merge(added []*record[K, V]) []*record[K, V] {
	byName := func(a, b *record[K, V]) int { return strings.Compare(a.name, b.name) }
	slices.SortFunc(added, byName)
	out := make([]*record[K, V], 0, len(c.sorted)+len(added))
	i, j := 0, 0
	for i < len(c.sorted) && j < len(added) {
		if byName(c.sorted[i], added[j]) < 0 {
			out = append(out, c.sorted[i])
			i++
		} else {
			out = append(out, added[j])
			j++
		}
	}
	out = append(out, c.sorted[i:]...)
	return append(out, added[j:]...)
}
