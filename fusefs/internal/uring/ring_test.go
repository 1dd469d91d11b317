package uring

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestRingServesRequests: once the ring is registered, stats and writes
// reach the server through it and not through read(2).
func TestRingServesRequests(t *testing.T) {
	fs := &toyFS{ring: true}
	mnt := toyMount(t, fs, 1)
	before, ringBefore := fs.requests.Load(), fs.ringRequests.Load()
	// Another process makes the requests: this one serves the mount, and
	// a thread of its own blocked on it stalled a stop-the-world of the
	// garbage collector that the serving threads waited on (a hang seen
	// twice under load).
	script := `for i in 1 2 3 4 5 6 7 8 9 10; do stat "$0/file" >/dev/null || exit 1; done
head -c 10000 /dev/zero > "$0/file" || exit 1
[ "$(stat -c %s "$0/file")" = 10000 ] || { echo "size after write: $(stat -c %s "$0/file")"; exit 1; }
! stat "$0/missing" 2>/dev/null`
	if out, err := exec.Command("/bin/sh", "-c", script, mnt).CombinedOutput(); err != nil {
		t.Fatalf("requests through the mount: %v\n%s", err, out)
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
// the last idle one takes a request). The stats start once that one is
// registered: a request the kernel queued while its CPU's queue had no
// free entry waits for an entry to finish its request (see Serve).
func TestRingBlockedRequest(t *testing.T) {
	fs := &toyFS{ring: true, slow: make(chan struct{}), workers: 1}
	mnt := toyMount(t, fs, 1)
	// Other processes make the requests (see TestRingServesRequests).
	slow := exec.Command("stat", filepath.Join(mnt, "slow"))
	var slowErr strings.Builder
	slow.Stderr = &slowErr
	if err := slow.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the slow LOOKUP is in the server, and its queue has a
	// worker again.
	for deadline := time.Now().Add(10 * time.Second); fs.lookups.Load() == 0 || !fs.server.idleEverywhere(); {
		if time.Now().After(deadline) {
			t.Fatalf("the slow lookup never reached the server (%d lookups), or no worker replaced its own", fs.lookups.Load())
		}
		time.Sleep(time.Millisecond)
	}
	stats := exec.Command("/bin/sh", "-c", `for i in $(seq 100); do stat "$0/file" >/dev/null || exit 1; done`, mnt)
	done := make(chan error, 1)
	go func() {
		out, err := stats.CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%v: %s", err, out)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		close(fs.slow)
		stats.Process.Kill()
		t.Fatal("stats waited for the blocked request")
	}
	close(fs.slow)
	if err := slow.Wait(); err == nil || !strings.Contains(slowErr.String(), "No such file") {
		t.Fatalf("slow stat: %v (%s), want no such file", err, slowErr.String())
	}
}

// TestRingWorkersFollowCallers: a burst of callers starts about as many
// workers as there are callers, not a queue's limit. On one P, as the
// daemon runs, a new worker registers only once the handlers let it
// have the P; every request taken meanwhile found no idle worker, and
// each started another (20 callers of git status started 128 a queue).
func TestRingWorkersFollowCallers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	fs := &toyFS{ring: true, busy: time.Millisecond}
	mnt := toyMount(t, fs, 1)
	const callers = 32
	script := `for j in $(seq ` + fmt.Sprint(callers) + `); do
	(for i in $(seq 20); do stat "$0/file" >/dev/null || exit 1; done) &
done
wait`
	if out, err := exec.Command("/bin/sh", "-c", script, mnt).CombinedOutput(); err != nil {
		t.Fatalf("stats: %v\n%s", err, out)
	}
	workers := 0
	for i := range fs.server.count {
		workers += int(fs.server.count[i].Load())
	}
	queues := len(fs.server.count)
	t.Logf("%d workers on %d queues after %d callers", workers, queues, callers)
	if limit := callers + 2*queues; workers > limit {
		t.Fatalf("%d workers for %d callers on %d queues, want at most %d", workers, callers, queues, limit)
	}
}
