//go:build linux

package passthrough

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// kernel registers backing files as the FUSE device would, numbering
// them from 1, unless refuse is set; it records what it was asked.
type kernel struct {
	refuse syscall.Errno
	next   int32
	calls  []string
}

func (k *kernel) RegisterBackingFd(m *fuse.BackingMap) (int32, syscall.Errno) {
	if k.refuse != 0 {
		k.calls = append(k.calls, "register refused")
		return 0, k.refuse
	}
	k.next++
	k.calls = append(k.calls, fmt.Sprintf("register %d", k.next))
	return k.next, 0
}

func (k *kernel) UnregisterBackingFd(id int32) syscall.Errno {
	k.calls = append(k.calls, fmt.Sprintf("unregister %d", id))
	return 0
}

func (k *kernel) check(t *testing.T, want ...string) {
	t.Helper()
	if !slices.Equal(k.calls, want) {
		t.Fatalf("the kernel was asked %q, want %q", k.calls, want)
	}
	k.calls = nil
}

// mount returns a mount on a fake kernel and its log.
func mount(t *testing.T) (*Mount, *kernel, *[]string) {
	var logged []string
	k := &kernel{}
	m := &Mount{Kernel: k, Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }}
	return m, k, &logged
}

// osFile opens a new file of its own: what a path's content is.
func osFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "content"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// opened is what Open answered.
type opened struct {
	backing int32
	flags   uint32
	errno   syscall.Errno
	stale   bool
}

func open(m *Mount, nd *Node, f *os.File, replaced bool) opened {
	var o opened
	o.backing, o.flags, o.errno = m.Open(nd, f, replaced, func() { o.stale = true })
	return o
}

const (
	through = fuse.FOPEN_NOFLUSH | fuse.FOPEN_PASSTHROUGH
	cached  = fuse.FOPEN_NOFLUSH | fuse.FOPEN_KEEP_CACHE
)

// TestPassthroughShared: read-only opens of one OS file share the
// node's backing file, which the kernel gets back once the last of them
// is released.
func TestPassthroughShared(t *testing.T) {
	m, k, _ := mount(t)
	var nd Node
	f := osFile(t)
	for range 2 {
		if o := open(m, &nd, f, false); o != (opened{backing: 1, flags: through}) {
			t.Fatalf("read-only open of an OS file: %+v", o)
		}
	}
	k.check(t, "register 1")
	m.Release(&nd, 1)
	k.check(t)
	m.Release(&nd, 1)
	k.check(t, "unregister 1")
	if o := open(m, &nd, f, false); o != (opened{backing: 2, flags: through}) {
		t.Fatalf("open after the last release: %+v", o)
	}
	k.check(t, "register 2")
}

// TestPassthroughClash: while a node is read by passthrough, an open
// that cannot use its backing file (a write, or the path now holding
// another file) is answered ESTALE, after stale ran.
func TestPassthroughClash(t *testing.T) {
	m, k, _ := mount(t)
	var nd Node
	if o := open(m, &nd, osFile(t), false); o.flags != through {
		t.Fatalf("first open: %+v", o)
	}
	for name, f := range map[string]*os.File{"a write": nil, "another file": osFile(t)} {
		if o := open(m, &nd, f, false); o != (opened{errno: syscall.ESTALE, stale: true}) {
			t.Fatalf("%s beside a passthrough open: %+v, want ESTALE after stale", name, o)
		}
	}
	k.check(t, "register 1")
}

// TestPassthroughBesideCached: while a node has a cached open, no open
// of it uses passthrough (the kernel allows no mix), nor does any open
// of a replaced generation; cached opens never clash.
func TestPassthroughBesideCached(t *testing.T) {
	m, k, _ := mount(t)
	var nd Node
	f := osFile(t)
	for i, o := range []opened{open(m, &nd, nil, false), open(m, &nd, f, false), open(m, &nd, f, false)} {
		if o != (opened{flags: cached}) {
			t.Fatalf("open %d beside a cached one: %+v", i, o)
		}
	}
	m.Release(&nd, 0)
	m.Release(&nd, 0)
	if o := open(m, &nd, f, false); o != (opened{flags: cached}) {
		t.Fatalf("open beside the last cached one: %+v", o)
	}
	m.Release(&nd, 0)
	m.Release(&nd, 0)
	var fresh Node
	if o := open(m, &fresh, f, true); o != (opened{flags: cached}) {
		t.Fatalf("open of a replaced generation: %+v", o)
	}
	k.check(t)
	if o := open(m, &nd, f, false); o.flags != through {
		t.Fatalf("open once every cached one was released: %+v", o)
	}
	k.check(t, "register 1")
}

// TestPassthroughRefused: a kernel that refuses the mount's first
// backing file puts the mount in the default mode (ENOSYS, logged once)
// and is not asked again; one that refuses a later file only serves
// that open cached.
func TestPassthroughRefused(t *testing.T) {
	m, k, logged := mount(t)
	k.refuse = syscall.EPERM
	var nd Node
	f := osFile(t)
	if o := open(m, &nd, f, false); o != (opened{errno: syscall.ENOSYS}) {
		t.Fatalf("first open, refused: %+v, want ENOSYS", o)
	}
	if o := open(m, &nd, f, false); o != (opened{flags: cached}) {
		t.Fatalf("open after the refusal: %+v", o)
	}
	k.check(t, "register refused")
	if len(*logged) != 1 {
		t.Fatalf("logged %q, want one line", *logged)
	}

	m, k, logged = mount(t)
	var a, b Node
	if o := open(m, &a, f, false); o.flags != through {
		t.Fatalf("first open: %+v", o)
	}
	k.refuse = syscall.EIO
	if o := open(m, &b, f, false); o != (opened{flags: cached}) {
		t.Fatalf("open refused after the first: %+v", o)
	}
	if o := open(m, &b, nil, false); o != (opened{flags: cached}) {
		t.Fatalf("open once passthrough went off: %+v", o)
	}
	k.check(t, "register 1", "register refused")
	if len(*logged) != 1 {
		t.Fatalf("logged %q, want one line", *logged)
	}
}

// TestRetries: a retry is marked per thread and path until done, and
// the marks stay bounded.
func TestRetries(t *testing.T) {
	var r Retries
	if r.Pending() || r.Is(1, "a") {
		t.Fatal("a zero Retries has a mark")
	}
	r.Mark(1, "a")
	if !r.Pending() || !r.Is(1, "a") || r.Is(2, "a") || r.Is(1, "b") {
		t.Fatal("the mark is not for exactly thread 1 and path a")
	}
	r.Done(1, "a")
	if r.Pending() || r.Is(1, "a") {
		t.Fatal("Done left the mark")
	}
	for i := range maxRetrying + 1 {
		r.Mark(uint32(i), "a")
	}
	if len(r.m) > maxRetrying || !r.Is(maxRetrying, "a") {
		t.Fatalf("%d marks after %d, want at most %d with the last kept", len(r.m), maxRetrying+1, maxRetrying)
	}
}
