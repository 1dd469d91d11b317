package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestTuneGC: unless the environment says otherwise, garbage is
// collected at 4x the live heap, and more often above memoryLimit (the
// daemon holding 100,000 nodes stays under 150 MB).
func TestTuneGC(t *testing.T) {
	oldLimit := debug.SetMemoryLimit(math.MaxInt64)
	oldPercent := debug.SetGCPercent(100)
	t.Cleanup(func() {
		debug.SetMemoryLimit(oldLimit)
		debug.SetGCPercent(oldPercent)
	})
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	tuneGC()
	if got := debug.SetMemoryLimit(-1); got != memoryLimit {
		t.Errorf("memory limit %d, want %d", got, memoryLimit)
	}
	if got := debug.SetGCPercent(400); got != 400 {
		t.Errorf("GC percent %d, want 400", got)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "1GiB") // read by the runtime at start only
	tuneGC()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set: memory limit %d, want it left alone", got)
	}
}
