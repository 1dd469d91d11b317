//go:build linux

package fusefs

import (
	"io/fs"
	"slices"
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
	kept []listing // the oldest first, at most maxListings
}

type listing struct {
	n    *node  // the directory
	key  string // its path when read
	seq  uint64 // fsys.Published() before it was read
	ents []fs.DirEntry
}

// read returns the listing of directory n at key for a request that
// starts it (first) or reads on: one reading on gets the listing kept
// for n if still current; else one is read from fsys, then kept.
func (l *listings) read(n *node, key string, first bool, fsys *overlay.Fs) ([]fs.DirEntry, error) {
	seq := fsys.Published()
	if !first {
		l.mu.Lock()
		i := l.find(n)
		if i >= 0 && l.kept[i].key == key && l.kept[i].seq == seq {
			ents := l.kept[i].ents
			l.mu.Unlock()
			return ents, nil
		}
		l.mu.Unlock()
	}
	ents, err := fsys.ReadDirPlus(key)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop(n)
	if len(l.kept) == maxListings {
		l.kept = slices.Delete(l.kept, 0, 1)
	}
	l.kept = append(l.kept, listing{n: n, key: key, seq: seq, ents: ents})
	return ents, nil
}

// done lets go of n's listing: the kernel read it to its end.
func (l *listings) done(n *node) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop(n)
}

// find is the index of n's listing in kept, -1 if none. Must be called
// with l.mu held.
func (l *listings) find(n *node) int {
	return slices.IndexFunc(l.kept, func(k listing) bool { return k.n == n })
}

// drop lets go of n's listing, if kept. Must be called with l.mu held.
func (l *listings) drop(n *node) {
	if i := l.find(n); i >= 0 {
		l.kept = slices.Delete(l.kept, i, i+1)
	}
}
