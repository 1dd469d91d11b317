//go:build linux

package overlay

import (
	"strconv"
	"strings"
	"sync"
)

// draftLock is Draft.mu: a read-write lock whose holder for writing can
// let readers back in for a while and keep every other writer out. A
// commit plans and publishes with the lock held for writing, and lets
// readers in while it writes to the disk (share, reclaim): a lookup or
// read through the mount no longer waits for a large commit's disk
// writes, while nothing can change the draft under the commit.
type draftLock struct {
	writer sync.Mutex // held by a writer from Lock to Unlock, shared or not
	rw     sync.RWMutex
}

func (l *draftLock) Lock() {
	l.writer.Lock()
	l.rw.Lock()
}

func (l *draftLock) Unlock() {
	l.rw.Unlock()
	l.writer.Unlock()
}

func (l *draftLock) RLock()   { l.rw.RLock() }
func (l *draftLock) RUnlock() { l.rw.RUnlock() }

// share lets readers in; the caller holds the lock for writing and keeps
// other writers out until it calls reclaim and then Unlock.
func (l *draftLock) share() { l.rw.Unlock() }

// reclaim waits for the readers let in by share to leave.
func (l *draftLock) reclaim() { l.rw.Lock() }

// commitTemp reports whether name, in a disk directory, is a temp file
// or the staging directory of the commit with the given id (0: none
// running): listings leave them out while readers may look during the
// commit (see draftLock).
func commitTemp(name string, id uint64) bool {
	if id == 0 {
		return false
	}
	tid, ok := commitTempID(name)
	return ok && tid == id
}

// commitTempID is the id of the commit whose temp file or staging
// directory name, in a disk directory, is; false when it is none.
func commitTempID(name string) (uint64, bool) {
	i := strings.LastIndex(name, ".draftfs-")
	if i < 0 || name[0] != '.' {
		return 0, false
	}
	n := name[i+len(".draftfs-"):]
	if i == 0 {
		var ok bool
		if n, ok = strings.CutPrefix(n, "commit-"); !ok {
			return 0, false
		}
	}
	id, err := strconv.ParseUint(n, 10, 64)
	return id, err == nil && id != 0 && strconv.FormatUint(id, 10) == n
}
