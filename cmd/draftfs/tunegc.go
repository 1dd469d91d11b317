package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// memoryLimit is the heap size above which the daemon collects more
// often than every 2x: where the kernel keeps 100,000 nodes referenced,
// 2x their live heap is more than the memory draftfs means to take.
const memoryLimit = 128 << 20

// heavyHeadroom is how far heavyWork lifts the memory limit.
const heavyHeadroom = 256 << 20

// gc is the state of the memory limit that tuneGC manages.
var gc struct {
	mu sync.Mutex
	// gen numbers the chain of followLiveHeap finalizers that may set the
	// limit; a finalizer of an older one stops.
	gen int
	// heavy counts the heavyWork calls not ended yet.
	heavy int
}

// tuneGC sets how large the heap may grow: at Go's 2x the live heap
// (GOGC=100), but no more than memoryLimit, or half as much again as the
// live heap where that is more (see followLiveHeap). GOMEMLIMIT, when
// set, still rules. A larger GOGC collects less often but has every
// burst of writes take fresh pages, which cost more than the
// collections they spare (README, Runtime settings).
func tuneGC() {
	if os.Getenv("GOMEMLIMIT") == "" {
		gc.mu.Lock()
		defer gc.mu.Unlock()
		gc.gen++
		gc.heavy = 0
		debug.SetMemoryLimit(memoryLimit)
		followLiveHeap(gc.gen)
	}
}

// followLiveHeap sets the memory limit to gcLimit of the live heap after
// every collection, for as long as gen is the current chain (heavyWork
// stops it while it has the limit lifted): a large draft's metadata
// alone can come near memoryLimit (120 MB for 60,000 files), and a limit
// at the live heap has the collector run without a pause, taking the
// CPU the requests need.
func followLiveHeap(gen int) {
	type sentinel struct{ _ [16]byte } // not a tiny allocation: collected alone
	runtime.SetFinalizer(new(sentinel), func(*sentinel) {
		gc.mu.Lock()
		defer gc.mu.Unlock()
		if gen != gc.gen {
			return
		}
		debug.SetMemoryLimit(gcLimit(liveHeap()))
		followLiveHeap(gen)
	})
}

// heavyWork lifts the memory limit by heavyHeadroom until end is called,
// for a request that allocates in proportion to the draft (a commit,
// undo, discard or rewind of 10,000 files allocates a few hundred MB)
// and for a burst of writes through a mount. Under the limit alone,
// with a large live heap (the nodes of 100,000 files the kernel keeps
// referenced) each collection marks all of it every few tens of MB
// allocated: a 10,000-file commit spent 40% of its
// CPU collecting (README, Commit, status and scale). At the end the
// limit and its following of the live heap come back, in the
// background, after a collection that returns the memory the work took
// to the system where the runtime holds near the limit or more
// (restored at once, the limit then had the collector run without a
// pause until the runtime had given back the pages; see restoreLimit).
// Nothing while GOMEMLIMIT rules.
func heavyWork() (end func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if gc.heavy++; gc.heavy == 1 {
		gc.gen++ // the following stops, so no two chains follow at the end
		debug.SetMemoryLimit(debug.SetMemoryLimit(-1) + heavyHeadroom)
	}
	gen := gc.gen
	return sync.OnceFunc(func() {
		gc.mu.Lock()
		defer gc.mu.Unlock()
		if gen != gc.gen {
			return // tuned afresh meanwhile
		}
		if gc.heavy--; gc.heavy == 0 {
			go restoreLimit(gen)
		}
	})
}

// heavyWorkFor is heavyWork for daemon.Options.Heavy, which says what
// the work is: every kind lifts the limit alike.
func heavyWorkFor(string) (end func()) { return heavyWork() }

// restoreLimit ends heavyWork's lift of chain gen, unless other heavy
// work began meanwhile. Where the runtime holds near as much memory as
// the limit will allow or more, a collection first hands what it can
// back to the system (see heavyWork); below that the limit comes back
// at once, sparing the forced collection and the return of every free
// page at the end of each small burst (a tool that pauses between its
// writes, as python3 -m venv does, ends one every few seconds; README,
// Runtime settings).
func restoreLimit(gen int) {
	if limit := gcLimit(liveHeap()); heldMemory() > limit-limit/8 {
		debug.FreeOSMemory()
	}
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if gen != gc.gen || gc.heavy > 0 {
		return
	}
	debug.SetMemoryLimit(gcLimit(liveHeap()))
	followLiveHeap(gen)
}

// gcLimit is the memory limit for a live heap of live bytes.
func gcLimit(live uint64) int64 {
	return max(memoryLimit, int64(live+live/2))
}

// heldMemory is the memory the runtime holds that its memory limit
// counts: all it mapped but what it gave back to the system, in bytes
// (a variable for the tests).
var heldMemory = func() int64 {
	v := readMetrics("/memory/classes/total:bytes", "/memory/classes/heap/released:bytes")
	return int64(v[0] - v[1])
}

// liveHeap is the heap the last collection found live, in bytes.
func liveHeap() uint64 { return readMetrics("/gc/heap/live:bytes")[0] }

// readMetrics reads the runtime's metrics names, 0 for one this Go does
// not have as a count.
func readMetrics(names ...string) []uint64 {
	s := make([]metrics.Sample, len(names))
	for i, n := range names {
		s[i].Name = n
	}
	metrics.Read(s)
	v := make([]uint64, len(s))
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = s[i].Value.Uint64()
		}
	}
	return v
}
