package uring

import (
	"os"
	"path/filepath"
	"testing"
	"time"
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

// TestRingBlockedRequest: a request that blocks in the server holds up
// its own worker only: other requests, from any CPU, are still served,
// even when the queue started with a single worker (another starts when
// the last idle one takes a request).
func TestRingBlockedRequest(t *testing.T) {
	fs := &toyFS{ring: true, slow: make(chan struct{}), workers: 1}
	mnt := toyMount(t, fs, 1)
	blocked := make(chan error, 1)
	go func() {
		_, err := os.Stat(filepath.Join(mnt, "slow"))
		blocked <- err
	}()
	// Wait until the slow LOOKUP is in the server.
	for deadline := time.Now().Add(10 * time.Second); fs.lookups.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the slow lookup never reached the server")
		}
		time.Sleep(time.Millisecond)
	}
	done := make(chan error, 1)
	go func() {
		for range 100 {
			if _, err := os.Stat(filepath.Join(mnt, "file")); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		close(fs.slow)
		t.Fatal("stats waited for the blocked request")
	}
	close(fs.slow)
	if err := <-blocked; !os.IsNotExist(err) {
		t.Fatalf("slow stat: %v", err)
	}
}
