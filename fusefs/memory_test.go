//go:build linux

package fusefs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/draftfs/draftfs/overlay"
)

// TestMemoryBounded walks 100,000 files through the mount: the server
// keeps a node for each only while the kernel holds it, so once the
// kernel drops its caches the nodes go, and repeated walks do not grow
// the heap or the resident set.
func TestMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 100,000 files")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to make the kernel drop its caches")
	}
	const dirs, perDir = 100, 1000
	m := testMount(t, mountOptions{})
	for d := range dirs {
		dir := filepath.Join(m.root, fmt.Sprintf("d%03d", d))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range perDir {
			fh, err := os.Create(filepath.Join(dir, fmt.Sprintf("f%04d", f)))
			if err != nil {
				t.Fatal(err)
			}
			fh.Close()
		}
	}
	// The timeline's checkpoint of the 100,000 new files, taken now:
	// left to the quiet period it runs during the walks below, and what
	// it allocates (under -race, with its shadow) reads as their growth.
	if _, err := m.d.Checkpoint(overlay.Author{Source: overlay.SourceMount}, ""); err != nil {
		t.Fatal(err)
	}
	walk := func() {
		t.Helper()
		out := shell(t, m.mnt, "find . | wc -l")
		if got, want := strings.TrimSpace(out), strconv.Itoa(1+dirs+dirs*perDir); got != want {
			t.Fatalf("find saw %s entries, want %s", got, want)
		}
	}
	dropCaches := func() int {
		t.Helper()
		if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0); err != nil {
			t.Skipf("cannot make the kernel drop its caches: %v", err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			n := nodeCount(m.srv, nil)
			if n < 1000 || time.Now().After(deadline) {
				return n
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	walk()
	held := nodeCount(m.srv, nil)
	if rare := nodeCount(m.srv, func(n *node) bool { return n.rare.Load() != nil }); rare > 0 {
		t.Errorf("%d of %d nodes made their rare fields during a walk", rare, held)
	}
	heapHeld, rssHeld := memory(t)
	if held < dirs*perDir/2 {
		t.Logf("the kernel holds only %d nodes after the walk", held)
	}
	if left := dropCaches(); left >= 1000 {
		t.Fatalf("%d nodes left after the kernel dropped its caches (%d after the walk)", left, held)
	}
	heap0, rss0 := memory(t)
	for range 3 {
		walk()
		dropCaches()
	}
	heap1, rss1 := memory(t)
	t.Logf("after a walk: %d nodes, heap %d KiB, RSS %d KiB; after the kernel let go: heap %d -> %d KiB, RSS %d -> %d KiB over three more walks",
		held, heapHeld>>10, rssHeld>>10, heap0>>10, heap1>>10, rss0>>10, rss1>>10)
	if heap1 > heap0+heap0/2+16<<20 {
		t.Errorf("the heap grew from %d to %d KiB over three walks", heap0>>10, heap1>>10)
	}
	if rss1 > rss0+rss0/2+64<<20 {
		t.Errorf("the resident set grew from %d to %d KiB over three walks", rss0>>10, rss1>>10)
	}
}

// TestNodeSmall: go-fuse keeps a node for every inode the kernel
// references, so draftfs's own fields in it stay few; what few nodes
// use lives in nodeRare.
func TestNodeSmall(t *testing.T) {
	own := unsafe.Sizeof(node{}) - unsafe.Sizeof(gofs.Inode{})
	if own > 32 {
		t.Errorf("a node holds %d bytes besides go-fuse's Inode, want at most 32", own)
	}
}

// memory returns the live heap after a collection and the resident set.
func memory(t *testing.T) (heap, rss uint64) {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range bytes.Lines(status) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			kb, _ := strconv.ParseUint(string(bytes.Fields(rest)[0]), 10, 64)
			rss = kb << 10
		}
	}
	return ms.HeapInuse, rss
}

// nodeCount counts the nodes the kernel holds and go-fuse keeps for it
// that which accepts (nil: all).
func nodeCount(s *Server, which func(*node) bool) int {
	count := 0
	todo := []*gofs.Inode{&s.root.Inode}
	for len(todo) > 0 {
		in := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if which == nil || which(in.Operations().(*node)) {
			count++
		}
		for _, ch := range in.Children() {
			todo = append(todo, ch)
		}
	}
	return count
}
