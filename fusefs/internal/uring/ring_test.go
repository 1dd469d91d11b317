package uring

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRingServesRequests: once the ring is registered, stats and writes
// reach the server through it and not through read(2).
func TestRingServesRequests(t *testing.T) {
	fs := &toyFS{ring: true}
	mnt := toyMount(t, fs, 1)
	before, ringBefore := fs.requests.Load(), fs.ringRequests.Load()
	for range 10 {
		if _, err := os.Stat(filepath.Join(mnt, "file")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(mnt, "file"), make([]byte, 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(mnt, "file"))
	if err != nil || fi.Size() != 10000 {
		t.Fatalf("stat after write: %v, %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "missing")); !os.IsNotExist(err) {
		t.Fatalf("stat missing: %v", err)
	}
	all, ring := fs.requests.Load()-before, fs.ringRequests.Load()-ringBefore
	t.Logf("%d requests, %d over the ring", all, ring)
	if ring < 20 || ring != all {
		t.Fatalf("%d requests, %d of them over the ring: want all, at least 20", all, ring)
	}
}
