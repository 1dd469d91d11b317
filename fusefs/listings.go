//go:build linux

package fusefs

import (
	"io/fs"
	"sync"

	"github.com/draftfs/draftfs/overlay"
)

// maxListings is how many listings are kept at once. A listing is read
// to its end within microseconds, unless its reader stopped early
// (`ls | head`): those are let go of first.
const maxListings = 16

// listings keeps the directory listings READDIRPLUS requests read, for
// the requests that read on at their offsets, until one reads past the
// end. Without OPENDIR every request opens its directory afresh
// (noopendir), and the kernel reads each listing until an empty reply:
// every directory listed was read from the engine twice or more, a
// stat of each name each time. A kept listing serves while nothing was
// published since it was read ([overlay.Fs.Published]), and its
// offsets stay the ones the kernel was given.
type listings struct {
	mu   sync.Mutex
	kept map[*node]*listing
	// order: the nodes of kept, the oldest first
	order []*node
}

type listing struct {
	key  string // the directory's path when read
	seq  uint64 // fsys.Published() before it was read
	ents []fs.DirEntry
}

// read returns the listing of directory n at key for a request that
// starts it (first) or reads on: one reading on gets the listing kept
// for n if still current; else one is read from fsys, then kept.
func (l *listings) read(n *node, key string, first bool, fsys *overlay.Fs) ([]fs.DirEntry, error) {
	seq := fsys.Published()
	l.mu.Lock()
	if k := l.kept[n]; !first && k != nil && k.key == key && k.seq == seq {
		l.mu.Unlock()
		return k.ents, nil
	}
	l.mu.Unlock()
	ents, err := fsys.ReadDirPlus(key)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kept == nil {
		l.kept = map[*node]*listing{}
	}
	if l.kept[n] == nil {
		if len(l.order) == maxListings {
			delete(l.kept, l.order[0])
			l.order = append(l.order[:0], l.order[1:]...)
		}
		l.order = append(l.order, n)
	}
	l.kept[n] = &listing{key: key, seq: seq, ents: ents}
	return ents, nil
}

// done lets go of n's listing: the kernel read it to its end.
func (l *listings) done(n *node) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kept[n] == nil {
		return
	}
	delete(l.kept, n)
	for i, m := range l.order {
		if m == n {
			l.order = append(l.order[:i], l.order[i+1:]...)
			break
		}
	}
}
