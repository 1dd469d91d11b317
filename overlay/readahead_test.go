//go:build linux

package overlay_test

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident is the share of path's pages in the page cache (mincore).
func resident(t *testing.T, path string) float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	in := 0
	for _, v := range vec {
		in += int(v & 1)
	}
	return float64(in) / float64(len(vec))
}

// evict drops path's pages from the page cache, or skips the test where
// the page cache cannot drop them (tmpfs keeps its files there).
func evict(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	if resident(t, path) > 0 {
		t.Skipf("%s: its pages stay in memory once dropped (tmpfs?)", path)
	}
}

// TestReadAheadBeside: the first read of a disk file in a directory has
// the disk read its other small files into the page cache, and only
// those: not a large one, not what a symlink beside it leads to, not a
// subdirectory's files.
func TestReadAheadBeside(t *testing.T) {
	big := strings.Repeat("b", 2<<20)
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret": strings.Repeat("s", 64<<10)})
	e := newViewEnv(t, map[string]string{
		"pkg/a.go": strings.Repeat("a", 64<<10), "pkg/b.go": strings.Repeat("x", 64<<10),
		"pkg/c.go": strings.Repeat("y", 100<<10), "pkg/big.bin": big, "pkg/sub/d.go": strings.Repeat("d", 64<<10),
	})
	if err := os.Symlink(outside+"/secret", e.disk("pkg/link")); err != nil {
		t.Fatal(err)
	}
	files := []string{e.disk("pkg/a.go"), e.disk("pkg/b.go"), e.disk("pkg/c.go"), e.disk("pkg/big.bin"), e.disk("pkg/sub/d.go"), outside + "/secret"}
	for _, p := range files {
		evict(t, p)
	}
	f, err := e.v.Open("pkg/a.go")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	deadline := time.Now().Add(10 * time.Second)
	for resident(t, e.disk("pkg/b.go")) < 1 || resident(t, e.disk("pkg/c.go")) < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("b.go and c.go not read ahead: %.2f and %.2f of their pages in memory",
				resident(t, e.disk("pkg/b.go")), resident(t, e.disk("pkg/c.go")))
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The pass that read b.go and c.go is over once the workspace
	// closes: what it left alone stays out.
	if err := e.ws.Close(); err != nil {
		t.Fatal(err)
	}
	e.open()
	for _, p := range []string{e.disk("pkg/big.bin"), e.disk("pkg/sub/d.go"), outside + "/secret"} {
		if r := resident(t, p); r > 0.1 {
			t.Errorf("%s read ahead: %.2f of its pages in memory", p, r)
		}
	}
}
