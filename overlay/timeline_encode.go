//go:build linux

package overlay

import (
	"encoding/json"
	"errors"
	"hash/fnv"
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
//
// It also cuts the encoding into the chunks the chunk store keeps, at
// record boundaries: a run of records (a group) ends after a record whose
// name's hash says so (one in groupRecords), or once it holds groupMax
// bytes. The cuts depend on the records alone, so a state that changed
// in a few records has the chunks of the one before but for the groups
// that hold them, and the hash of a group whose records are as the last
// encoding had them is taken from that encoding instead of being
// computed again: a checkpoint of a large draft that changed in a few
// files hashes and compresses a few groups, not the whole state.
type stateEncoder struct {
	entries recordCache[string, *entry]
	inodes  recordCache[uint64, *inode]
	data    recordCache[uint64, *cpData]
	gen     uint64 // encodings begun
	buf     []byte // the last encoding, whose memory the next reuses
}

// groupRecords is how many records a group holds on average, groupMax
// the most bytes it holds but for its last record.
const (
	groupRecords = 256
	groupMax     = chunkMax
)

// putFunc keeps a chunk and returns its hash (chunkStore.putChunk).
type putFunc func([]byte) (string, error)

// encode returns st's encoding, as json.Marshal writes it, and the hashes
// of the chunks it is cut into, each kept by put. The encoding is valid
// until the next call.
func (e *stateEncoder) encode(st *cpState, put putFunc) (_ []byte, hashes []string, err error) {
	e.gen++
	c := cutter{out: e.buf[:0], put: put}
	defer func() { e.buf = c.out[:0] }()
	c.out = append(c.out, `{"entries":`...)
	if err := e.entries.append(&c, e.gen, st.Entries, func(k string) string { return k }); err != nil {
		return nil, nil, err
	}
	c.out = append(c.out, `,"inodes":`...)
	if err := e.inodes.append(&c, e.gen, st.Inodes, formatIno); err != nil {
		return nil, nil, err
	}
	if len(st.Data) > 0 {
		c.out = append(c.out, `,"data":`...)
		if err := e.data.append(&c, e.gen, st.Data, formatIno); err != nil {
			return nil, nil, err
		}
	}
	if len(st.Blobs) > 0 {
		b, err := json.Marshal(st.Blobs)
		if err != nil {
			return nil, nil, err
		}
		c.out = append(append(c.out, `,"blobs":`...), b...)
	}
	c.out = strconv.AppendUint(append(c.out, `,"nextIno":`...), st.NextIno, 10)
	c.out = append(c.out, '}')
	// The end, from the last map's, is a small chunk of its own.
	if _, err := c.cut(""); err != nil {
		return nil, nil, err
	}
	return c.out, c.hashes, nil
}

// forget drops the chunk hashes e knows from the last encoding: the
// chunk store may not have kept those chunks (a checkpoint's batch that
// failed), so the next encoding keeps all of them again.
func (e *stateEncoder) forget() {
	clear(e.entries.groups)
	clear(e.inodes.groups)
	clear(e.data.groups)
}

// stateHash is the hash of a state cut into chunks hashes: the same
// state is cut the same way, so two states are the same if and only if
// their hashes are.
func stateHash(hashes []string) string { return hashBytes([]byte(strings.Join(hashes, ""))) }

// errStaleGroup: a group's hash, taken from the last encoding, is not
// the hash of its bytes (checked when verifyCaptures is set).
var errStaleGroup = errors.New("overlay: timeline: a state chunk's hash was taken from an encoding with other bytes")

// cutter is an encoding under way and the chunks it was cut into: those
// up to start.
type cutter struct {
	out    []byte
	start  int
	hashes []string
	put    putFunc
}

// cut ends a chunk at the end of the encoding so far: its hash is known
// when not "" (a group as the last encoding had it), else it is kept
// with put. It returns the chunk's hash; an empty chunk is none.
func (c *cutter) cut(known string) (string, error) {
	b := c.out[c.start:]
	if len(b) == 0 {
		return "", nil
	}
	h := known
	if h == "" {
		var err error
		if h, err = c.put(b); err != nil {
			return "", err
		}
	} else if verifyCaptures && hashBytes(b) != h {
		return "", errStaleGroup
	}
	c.start = len(c.out)
	c.hashes = append(c.hashes, h)
	return h, nil
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
// json.Marshal writes them (by the key's text), and the groups the last
// encoding cut them into.
type recordCache[K comparable, V comparable] struct {
	enc map[K]*record[K, V]
	// sorted are enc's records in order: the encoding walks them, not
	// the map (a lookup each was most of a large draft's encoding).
	sorted []*record[K, V]
	// groups are the last encoding's groups, by their first record.
	groups map[*record[K, V]]group[K, V]
}

// record is a member's key, value and encoding, `"key":value`.
type record[K, V any] struct {
	k    K
	v    V
	name string // the key's text
	b    []byte
	gen  uint64 // the encoding that last encoded it
	cut  bool   // a group ends with it (see stateEncoder)
}

// group is a run of records an encoding cut as one chunk: its last
// record, how many, the bytes before its first record when it begins
// the map ("" otherwise: then a comma), and the chunk's hash.
type group[K, V any] struct {
	last *record[K, V]
	n    int
	lead string
	hash string
}

// endsGroup reports whether a group ends with the record of key text
// name, groupRecords names in one.
func endsGroup(name string) bool {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()%groupRecords == 0
}

// append appends m's JSON to c's encoding, as json.Marshal writes it,
// cutting it into chunks (see stateEncoder); name gives a key's text and
// gen numbers this encoding.
func (c *recordCache[K, V]) append(ct *cutter, gen uint64, m map[K]V, name func(K) string) error {
	if m == nil {
		ct.out = append(ct.out, "null"...)
		return nil
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
			r.cut = endsGroup(r.name)
			added = append(added, r)
			c.enc[k] = r
		}
		kb, err := json.Marshal(r.name)
		if err != nil {
			return err
		}
		vb, err := json.Marshal(v)
		if err != nil {
			return err
		}
		r.v, r.b, r.gen = v, append(append(kb, ':'), vb...), gen
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
	ct.out = append(ct.out, '{')
	groups := make(map[*record[K, V]]group[K, V], len(c.groups))
	var g group[K, V]
	var first *record[K, V]
	dirty := false
	for i, r := range c.sorted {
		if first == nil {
			first, g, dirty = r, group[K, V]{}, false
			if i == 0 {
				// What comes before the map's first record joins its
				// group: the state's start, the maps before, their ends.
				g.lead = string(ct.out[ct.start:])
			}
		}
		if i > 0 {
			ct.out = append(ct.out, ',')
			yieldAt(i)
		}
		ct.out = append(ct.out, r.b...)
		g.n++
		dirty = dirty || r.gen == gen
		if !r.cut && len(ct.out)-ct.start < groupMax && i < len(c.sorted)-1 {
			continue
		}
		g.last = r
		known := ""
		if was, ok := c.groups[first]; ok && !dirty && was.last == r && was.n == g.n && was.lead == g.lead {
			known = was.hash
		}
		var err error
		if g.hash, err = ct.cut(known); err != nil {
			return err
		}
		groups[first] = g
		first = nil
	}
	c.groups = groups
	ct.out = append(ct.out, '}')
	return nil
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
