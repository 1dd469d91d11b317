//go:build linux

package fusefs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay"
)

// waitReleased waits until the server has heard of the release of every
// file the kernel opened (the kernel sends RELEASE after close returns):
// until then a node counts a closed writer as open, and a read-only open
// of it does not use passthrough.
func waitReleased(t testing.TB, m *mounted) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		open := 0
		m.srv.files.Range(func(any, any) bool { open++; return true })
		if open == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d files still open after 5 s", open)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPassthroughReads checks who serves reads: in passthrough mode the
// kernel reads a file untouched on disk and a draft file without asking
// the server, while a buffer is read through it; in the default mode
// every first read of a file asks the server.
func TestPassthroughReads(t *testing.T) {
	for _, pt := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "passthrough"}[pt], func(t *testing.T) { passthroughReads(t, pt) })
	}
}

func passthroughReads(t *testing.T, pt bool) {
	if !pt && passthroughAll {
		t.Skip("DRAFTFS_TEST_PASSTHROUGH=1: no mount is in the default mode")
	}
	var log requestLog
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	m := testMount(t, mountOptions{files: map[string]string{"disk.bin": big, "buf.txt": "disk\n"}, passthrough: pt, logf: log.logf})
	if err := os.WriteFile(filepath.Join(m.mnt, "draft.txt"), []byte("draft\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.ws.Buffers().Open("buf.txt", 1, []byte("buffer\n")); err != nil {
		t.Fatal(err)
	}
	settle(t, m)
	waitReleased(t, m)
	for _, c := range []struct {
		name, want string
		through    bool // read through the server even in passthrough mode
	}{
		{"disk.bin", big, false},
		{"draft.txt", "draft\n", false},
		{"buf.txt", "buffer\n", true},
	} {
		log.count(readRequest)
		mustRead(t, filepath.Join(m.mnt, c.name), c.want)
		reads := log.count(readRequest)
		if want := !pt || c.through; (reads > 0) != want {
			t.Errorf("%s: %d READ requests reached the server; want some: %v", c.name, reads, want)
		}
	}
}

// TestPassthroughFallback mounts in passthrough mode a workspace the
// kernel refuses backing files from (one on kernel overlayfs: stacked
// too deep): the mount serves as in the default mode, without opens.
func TestPassthroughFallback(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting kernel overlayfs needs root")
	}
	var log requestLog
	m := testMount(t, mountOptions{passthrough: true, logf: log.logf, beforeOpen: func(t testing.TB, root string) {
		// The workspace becomes an overlayfs mount of a lower
		// directory holding the file.
		base := filepath.Dir(root)
		lower, upper, work := filepath.Join(base, "lower"), filepath.Join(base, "upper"), filepath.Join(base, "work")
		for _, d := range []string{lower, upper, work} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(lower, "f.txt"), []byte("on overlayfs\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work)
		if err := syscall.Mount("overlay", root, "overlay", 0, opts); err != nil {
			t.Skipf("kernel overlayfs: %v", err)
		}
		t.Cleanup(func() { syscall.Unmount(root, syscall.MNT_DETACH) })
	}})
	p := filepath.Join(m.mnt, "f.txt")
	for range 3 {
		mustRead(t, p, "on overlayfs\n")
	}
	log.mu.Lock()
	all := strings.Join(log.lines, "\n")
	log.mu.Unlock()
	if !strings.Contains(all, "passthrough unavailable") {
		t.Errorf("no message says passthrough is unavailable")
	}
	if n := strings.Count(all, ": OPEN n"); n > 2 { // go-fuse's own probe, the declined one
		t.Errorf("%d OPEN requests after the fallback; the kernel should open files itself", n)
	}
}

// TestPassthroughHeldOpen keeps a file open read-only (so the kernel
// reads it by passthrough) while the path is written through the mount,
// by the engine (as ACP or MCP would), pushed from an editor or renamed
// over: every change goes to the draft, never to the disk, no open fails,
// and a new open reads what the path holds. The held descriptor keeps
// the file it opened, as on a local disk whose file was replaced.
func TestPassthroughHeldOpen(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(t *testing.T, m *mounted, p string)
		want   string
	}{
		{"write through the mount", func(t *testing.T, m *mounted, p string) {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("appended\n"); err != nil {
				t.Fatal(err)
			}
		}, "disk\nappended\n"},
		{"engine write", func(t *testing.T, m *mounted, p string) {
			if err := afero.WriteFile(m.d.Fs(overlay.SourceACP), "f.txt", []byte("agent\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "agent\n"},
		{"buffer push", func(t *testing.T, m *mounted, p string) {
			if err := m.ws.Buffers().Open("f.txt", 1, []byte("unsaved\n")); err != nil {
				t.Fatal(err)
			}
		}, "unsaved\n"},
		{"rename over", func(t *testing.T, m *mounted, p string) {
			tmp := filepath.Join(filepath.Dir(p), "f.txt.tmp")
			if err := os.WriteFile(tmp, []byte("saved atomically\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
		}, "saved atomically\n"},
	} {
		for _, draftFirst := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/draft=%v", c.name, draftFirst), func(t *testing.T) {
				m := testMount(t, mountOptions{files: map[string]string{"f.txt": "disk\n"}, passthrough: true})
				p := filepath.Join(m.mnt, "f.txt")
				first := "disk\n"
				if draftFirst {
					// The held file is then a draft file.
					first = "draft\n"
					if err := os.WriteFile(p, []byte(first), 0o644); err != nil {
						t.Fatal(err)
					}
					waitReleased(t, m)
				}
				held, err := os.Open(p)
				if err != nil {
					t.Fatal(err)
				}
				defer held.Close()
				mustReadAt(t, held, first)
				c.change(t, m, p)
				settle(t, m)
				want := c.want
				switch {
				case draftFirst && c.name == "write through the mount":
					want = "draft\nappended\n"
				case draftFirst && c.name == "buffer push":
					want = first // the draft wins over a buffer
				}
				mustRead(t, p, want)
				mustRead(t, filepath.Join(m.root, "f.txt"), "disk\n")
				// Another reader joins the held one, then both go.
				again, err := os.Open(p)
				if err != nil {
					t.Fatal(err)
				}
				mustReadAt(t, again, want)
				again.Close()
				held.Close()
				mustRead(t, p, want)
			})
		}
	}
}

// TestPassthroughMixedOpens opens a few files at random read-only,
// write-only and read-write from several goroutines, holding some open,
// while the engine writes and discards them: the kernel refuses an open
// whose I/O mode clashes with another open of the inode (EIO), so any
// error fails the test. (What the reads return is not checked: appends
// racing an engine rewrite use the kernel's size of the file, in either
// mode; see the package documentation.)
func TestPassthroughMixedOpens(t *testing.T) {
	files := map[string]string{}
	for i := range 4 {
		files[fmt.Sprintf("f%d", i)] = "v0\n"
	}
	m := testMount(t, mountOptions{files: files, passthrough: true})
	acp := m.d.Fs(overlay.SourceACP)
	stop := make(chan struct{})
	var failed atomic.Bool
	fail := func(format string, args ...any) {
		failed.Store(true)
		t.Errorf(format, args...)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			var held []*os.File
			defer func() {
				for _, f := range held {
					f.Close()
				}
			}()
			for i := 0; !failed.Load(); i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("f%d", rng.IntN(4))
				p := filepath.Join(m.mnt, name)
				flag := []int{os.O_RDONLY, os.O_RDONLY, os.O_WRONLY | os.O_APPEND, os.O_RDWR | os.O_APPEND}[rng.IntN(4)]
				f, err := os.OpenFile(p, flag, 0)
				if err != nil {
					fail("open %s (flags %#x): %v", name, flag, err)
					return
				}
				switch flag {
				case os.O_RDONLY:
					if _, err := io.ReadAll(f); err != nil {
						fail("read %s: %v", name, err)
					}
				default:
					if _, err := f.Write([]byte(fmt.Sprintf("w%d.%d\n", g, i))); err != nil {
						fail("write %s: %v", name, err)
					}
				}
				if rng.IntN(3) == 0 && len(held) < 3 {
					held = append(held, f)
				} else {
					f.Close()
				}
				if len(held) > 0 && rng.IntN(4) == 0 {
					held[0].Close()
					held = held[1:]
				}
			}
		}()
	}
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; time.Now().Before(deadline) && !failed.Load(); i++ {
		name := fmt.Sprintf("f%d", i%4)
		switch i % 3 {
		case 0, 1:
			if err := afero.WriteFile(acp, name, []byte(fmt.Sprintf("v%d\n", i)), 0o644); err != nil {
				fail("engine write: %v", err)
			}
		case 2:
			if _, err := m.d.Discard([]string{name}, overlay.SourceCLI); err != nil {
				fail("discard: %v", err)
			}
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	for name := range files {
		mustRead(t, filepath.Join(m.root, name), "v0\n")
	}
}

// TestPassthroughStaleRetry: an open that would clash with a
// passthrough open is answered ESTALE, and the kernel's retry succeeds
// even when, in between, the path got a new inode number (a commit
// does that) that another reader opened by passthrough.
func TestPassthroughStaleRetry(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"f.txt": "disk\n"}, passthrough: true})
	p := filepath.Join(m.mnt, "f.txt")
	held, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	mustReadAt(t, held, "disk\n")
	// The hook runs once, in the server, before the write open below is
	// answered ESTALE: the path gets a new inode number, which another
	// reader looks up and opens by passthrough.
	type opened struct {
		f   *os.File
		err error
	}
	hooked := make(chan opened, 1)
	var once sync.Once
	hook := func() {
		once.Do(func() {
			tmp := filepath.Join(m.root, "f.txt.tmp")
			err := os.WriteFile(tmp, []byte("new\n"), 0o644)
			if err == nil {
				err = os.Rename(tmp, filepath.Join(m.root, "f.txt"))
			}
			var f *os.File
			if err == nil {
				m.srv.cache.Entry("f.txt")
				f, err = os.Open(p)
			}
			hooked <- opened{f, err}
		})
	}
	testHookStale.Store(&hook)
	defer func() {
		testHookStale.Store(nil)
		select {
		case o := <-hooked:
			if o.f != nil {
				o.f.Close()
			}
		default:
		}
	}()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatalf("open for writing beside a passthrough read: %v", err)
	}
	if _, err := f.WriteString("appended\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var o opened
	select {
	case o = <-hooked:
		hooked <- o // closed at the end
	default:
		t.Fatal("the write open was not answered ESTALE: the clash under test did not happen")
	}
	if o.err != nil {
		t.Fatalf("the hook's open of the new inode number: %v", o.err)
	}
	other := o.f
	var st syscall.Stat_t
	if err := syscall.Fstat(int(other.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	backed := false
	m.srv.files.Range(func(_, v any) bool {
		h := v.(*openFile)
		backed = backed || (h.backing != 0 && h.n.StableAttr().Ino == st.Ino)
		return true
	})
	if !backed {
		t.Fatal("the hook's reader of the new inode number was not opened by passthrough: the clash under test did not happen")
	}
	mustReadAt(t, other, "new\n")
	mustReadAt(t, held, "disk\n")
	mustRead(t, p, "new\nappended\n")
	mustRead(t, filepath.Join(m.root, "f.txt"), "new\n")
}

// TestForgetDuringLookup: a lookup served while go-fuse drops another
// node of the same identity (the kernel forgot it after the lookup
// began) leaves the server knowing the node the kernel got. Here that
// node is a hard link's, made of a new generation by a clashing open, so
// a write through the other link's node must drop the attributes the
// kernel keeps for it; a lost node kept its old size.
func TestForgetDuringLookup(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"f": "one\n"}, passthrough: true})
	f, g := filepath.Join(m.mnt, "f"), filepath.Join(m.mnt, "g")
	if err := os.Link(f, g); err != nil {
		t.Fatal(err)
	}
	reader, err := os.Open(f) // by passthrough
	if err != nil {
		t.Fatal(err)
	}
	var stale atomic.Bool
	hook := func() { stale.Store(true) }
	testHookStale.Store(&hook)
	mustAppend(t, g, "two\n") // clashes: g gets a node of a new generation
	testHookStale.Store(nil)
	if !stale.Load() {
		t.Fatal("the write open of g was not answered ESTALE: the clash under test did not happen")
	}
	reader.Close()
	waitReleased(t, m)
	ino := ino(t, f)

	// g's node is kept by a descriptor alone while its entry goes; a
	// lookup of g takes a node, and the descriptor is closed: the
	// kernel forgets the node before go-fuse registers the lookup's,
	// unless the server holds the forget off until the lookup is
	// answered (then the lookup gave the kernel the same node again,
	// and it is not dropped).
	pathFd, err := syscall.Open(g, unix.O_PATH, 0)
	if err != nil {
		t.Fatal(err)
	}
	m.srv.cache.Entry("g")
	looking, forgetting, looked := make(chan struct{}), make(chan struct{}), make(chan struct{})
	dropped := make(chan *node, 1)
	var lookOnce, forgetOnce sync.Once
	lookupHook := func(key string) {
		if key == "g" {
			lookOnce.Do(func() {
				close(looking)
				waitFor(forgetting, 300*time.Millisecond)
			})
		}
	}
	forgetHook := func(n *node) {
		if n.StableAttr().Ino == ino && n.StableAttr().Gen > 0 {
			forgetOnce.Do(func() {
				close(forgetting)
				waitFor(looked, 300*time.Millisecond)
				dropped <- n
			})
		}
	}
	testHookMade.Store(&lookupHook)
	testHookForget.Store(&forgetHook)
	defer testHookMade.Store(nil)
	defer testHookForget.Store(nil)
	made := make(chan error, 1)
	go func() {
		made <- os.Mkdir(g, 0o755) // looks g up, and fails
		close(looked)
	}()
	if !waitFor(looking, 5*time.Second) {
		t.Fatal("g was not looked up again: the race under test did not happen")
	}
	syscall.Close(pathFd)
	if err := <-made; !errors.Is(err, fs.ErrExist) {
		t.Fatalf("mkdir over g: %v, want EEXIST", err)
	}
	select {
	case n := <-dropped: // the table hears of it next
		deadline := time.Now().Add(5 * time.Second)
		for k, ok := m.srv.nodes.Known(ino, false); ok && k == n && time.Now().Before(deadline); k, ok = m.srv.nodes.Known(ino, false) {
			time.Sleep(time.Millisecond)
		}
	case <-time.After(300 * time.Millisecond):
	}

	// The kernel dropped the attributes that lookup gave, as an inode
	// was evicted while it was served; a second lookup of g gives them
	// again, for the kernel to keep.
	relookup(t, m, g)
	mustAppend(t, f, "three\n")
	if got := lstat(t, g).Size; got != int64(len("one\ntwo\nthree\n")) {
		t.Fatalf("g's size after a write through f: %d, want %d", got, len("one\ntwo\nthree\n"))
	}
	mustRead(t, g, "one\ntwo\nthree\n")
}

// relookup makes the kernel look p up again (a mkdir over it, which
// fails) while a descriptor keeps its node.
func relookup(t testing.TB, m *mounted, p string) {
	t.Helper()
	fd, err := syscall.Open(p, unix.O_PATH, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	rel, err := filepath.Rel(m.mnt, p)
	if err != nil {
		t.Fatal(err)
	}
	m.srv.cache.Entry(rel)
	if err := os.Mkdir(p, 0o755); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("mkdir over %s: %v, want EEXIST", p, err)
	}
}

// waitFor reports whether ch closed within d.
func waitFor(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// mustAppend appends data to the file at p.
func mustAppend(t testing.TB, p, data string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
