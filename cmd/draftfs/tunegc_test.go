package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// tuneGCAfresh calls tuneGC without GOMEMLIMIT set, from Go's
// defaults, which the test's end puts back.
func tuneGCAfresh(t *testing.T) {
	oldLimit := debug.SetMemoryLimit(math.MaxInt64)
	oldPercent := debug.SetGCPercent(100)
	t.Cleanup(func() {
		debug.SetMemoryLimit(oldLimit)
		debug.SetGCPercent(oldPercent)
	})
	t.Setenv("GOMEMLIMIT", "")
	tuneGC()
}

// TestTuneGC: unless the environment says otherwise, garbage is
// collected at Go's 2x the live heap, and more often above memoryLimit
// (the daemon holding 100,000 nodes stays under 150 MB).
func TestTuneGC(t *testing.T) {
	tuneGCAfresh(t)
	if got := debug.SetMemoryLimit(-1); got != memoryLimit {
		t.Errorf("memory limit %d, want %d", got, memoryLimit)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent %d, want Go's default, 100", got)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "1GiB") // read by the runtime at start only
	tuneGC()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set: memory limit %d, want it left alone", got)
	}
}

// TestMemoryLimitFollowsLiveHeap: a live heap near memoryLimit raises
// the limit to half as much again (the collector would otherwise run
// without a pause), and it comes back down when the heap does.
func TestMemoryLimitFollowsLiveHeap(t *testing.T) {
	tuneGCAfresh(t)
	// waitLimit collects until the limit is what want says.
	waitLimit := func(want func(int64) bool) int64 {
		var got int64
		for range 200 {
			runtime.GC()
			time.Sleep(10 * time.Millisecond) // finalizers run after
			if got = debug.SetMemoryLimit(-1); want(got) {
				break
			}
		}
		return got
	}
	live := make([][]byte, 200)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	if got := waitLimit(func(l int64) bool { return l >= 300<<20 }); got < 300<<20 {
		t.Errorf("memory limit %d MiB with 200 MiB live, want 300 MiB or more", got>>20)
	}
	runtime.KeepAlive(live)
	live = nil
	if got := waitLimit(func(l int64) bool { return l == memoryLimit }); got != memoryLimit {
		t.Errorf("memory limit %d MiB once the heap is small again, want %d MiB", got>>20, memoryLimit>>20)
	}
}

// TestHeavyWorkLiftsLimit: a commit, undo, discard or rewind has the
// memory limit lifted by heavyHeadroom while any runs; after the last
// ends the limit follows the live heap again.
func TestHeavyWorkLiftsLimit(t *testing.T) {
	tuneGCAfresh(t)
	base := debug.SetMemoryLimit(-1)
	end1 := heavyWork()
	end2 := heavyWork()
	if got := debug.SetMemoryLimit(-1); got != base+heavyHeadroom {
		t.Fatalf("memory limit %d MiB during heavy work, want %d MiB", got>>20, (base+heavyHeadroom)>>20)
	}
	end1()
	end1() // once only
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	if got := debug.SetMemoryLimit(-1); got != base+heavyHeadroom {
		t.Fatalf("memory limit %d MiB while other heavy work runs, want %d MiB", got>>20, (base+heavyHeadroom)>>20)
	}
	end2()
	var got int64
	for range 200 {
		if got = debug.SetMemoryLimit(-1); got == memoryLimit {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got != memoryLimit {
		t.Fatalf("memory limit %d MiB after heavy work, want %d MiB", got>>20, memoryLimit>>20)
	}
	// Following the live heap again: a large one raises the limit.
	live := make([][]byte, 200)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	for range 200 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		if got = debug.SetMemoryLimit(-1); got >= 300<<20 {
			break
		}
	}
	runtime.KeepAlive(live)
	if got < 300<<20 {
		t.Errorf("memory limit %d MiB with 200 MiB live after heavy work, want 300 MiB or more", got>>20)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "1GiB")
	heavyWork()()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set: memory limit %d, want it left alone", got)
	}
}

// TestRestoreLimitFreesOnlyWhenNeeded: heavy work that ends with the
// runtime holding little memory ends without a forced collection; heavy
// work that ends with it holding more than the limit allows ends with
// one, which hands the memory back before the limit returns.
func TestRestoreLimitFreesOnlyWhenNeeded(t *testing.T) {
	tuneGCAfresh(t)
	measure := heldMemory
	t.Cleanup(func() { heldMemory = measure })
	if held, live := measure(), int64(liveHeap()); held < live {
		t.Errorf("heldMemory %d MiB, less than the live heap, %d MiB", held>>20, live>>20)
	}
	forced := func() uint64 { return readMetrics("/gc/cycles/forced:gc-cycles")[0] }
	// heavyHolding runs heavy work that ends with the runtime holding
	// held bytes and waits for the limit to come back; it returns how
	// many collections were forced meanwhile.
	heavyHolding := func(held int64) uint64 {
		t.Helper()
		heldMemory = func() int64 { return held }
		before := forced()
		end := heavyWork()
		lifted := debug.SetMemoryLimit(-1)
		end()
		for range 1000 {
			if debug.SetMemoryLimit(-1) != lifted {
				return forced() - before
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("the memory limit did not come back after heavy work")
		return 0
	}
	if n := heavyHolding(memoryLimit / 2); n != 0 {
		t.Errorf("%d forced collections at the end of heavy work that left the runtime holding half the limit, want none", n)
	}
	if n := heavyHolding(2 * memoryLimit); n == 0 {
		t.Error("no forced collection at the end of heavy work that left the runtime holding twice the limit")
	}
}
