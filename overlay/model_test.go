//go:build linux

package overlay_test

import (
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/buffers"
	"github.com/draftfs/draftfs/overlay/vfstest"
)

var (
	modelSeed = flag.Uint64("seed", 0, "run the model tests with this seed only (also DRAFTFS_SEED)")
	modelLong = flag.Bool("long", false, "run many more model sequences")
)

// The model test applies random sequences of operations both to the
// merged view of a workspace and, with the os package, to a plain
// directory that starts as a copy of it, and requires the same results:
// the same errno for every failure, the same bytes for every read, and
// at the end the same tree. The workspace on disk must never change
// except by the test's own disk mutations.
//
// Variants: plain; with editor buffers (a dirty buffer shows in the view
// as its text, so the reference holds that text, as if saved); with the
// engine closed and opened again at random points; with the disk
// changed underneath on paths the draft has not touched.

type modelVariant struct {
	name    string
	buffers bool // open, change, save and close editor buffers
	reopen  bool // restart the engine at random points
	disk    bool // change the disk under the draft
}

var modelVariants = []modelVariant{
	{name: "plain"},
	{name: "buffers", buffers: true},
	{name: "reopen", reopen: true},
	{name: "disk", disk: true},
	{name: "all", buffers: true, reopen: true, disk: true},
}

func TestModel(t *testing.T) {
	runs, ops := 40, 80
	if *modelLong {
		runs, ops = 2000, 200
	} else if testing.Short() {
		runs = 10
	}
	seed := *modelSeed
	if s := os.Getenv("DRAFTFS_SEED"); s != "" && seed == 0 {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("DRAFTFS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	for _, v := range modelVariants {
		t.Run(v.name, func(t *testing.T) {
			if seed != 0 {
				runModel(t, v, seed, ops)
				return
			}
			base := uint64(time.Now().UnixNano())
			for i := range uint64(runs) {
				if !runModel(t, v, base+i, ops) {
					return
				}
			}
		})
	}
}

// runModel runs one sequence; false when it failed.
func runModel(t *testing.T, v modelVariant, seed uint64, ops int) bool {
	t.Helper()
	fds := openFDs(t)
	m := newModel(t, v, seed)
	ok := m.run(ops)
	m.cleanup()
	if now := openFDs(t); now > fds {
		t.Errorf("model %s: %d file descriptors leaked", v.name, now-fds)
		ok = false
	}
	if !ok {
		long := ""
		if *modelLong {
			long = " -long"
		}
		t.Logf("model %s failed; reproduce with: go test ./overlay -run 'TestModel/%s$'%s -seed=%d (or DRAFTFS_SEED=%d)\nlast operations:\n%s",
			v.name, v.name, long, seed, seed, strings.Join(m.trace, "\n"))
	}
	return ok
}

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// handlePair is a file open in both trees.
type handlePair struct {
	key   string // the path opened
	path  string // and a number, for the trace
	flag  int
	view  afero.File
	ref   *os.File
	isDir bool
}

type model struct {
	t       *testing.T
	v       modelVariant
	rng     *rand.Rand
	gen     *vfstest.OpGen              // draws the operations from rng
	ops     map[string]func(vfstest.Op) // runs them, by kind
	dir     string                      // holds the workspace, the state and the reference
	env     *viewEnv
	ref     string
	handles []*handlePair
	// touched holds every path a changing operation of the view named
	// (and the targets of symlinks it followed): the buffer and disk
	// mutations stay away from these and from everything below them.
	touched map[string]bool
	// diskWant is what the workspace on disk must hold.
	diskWant map[string]string
	version  int64 // the last editor buffer version used
	opened   int   // handles opened so far, to name them in the trace
	trace    []string
	failed   bool
	commits  []commitStep // made and not undone, the last last
	changes  int          // changing operations of the view so far
}

// names of the model's paths: few, so operations collide often.
var modelNames = []string{"a", "b", "c", "f.txt", "g"}

func newModel(t *testing.T, v modelVariant, seed uint64) *model {
	dir, err := os.MkdirTemp("", "draftfs-model-")
	if err != nil {
		t.Fatal(err)
	}
	m := &model{t: t, v: v, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), dir: dir,
		ref: filepath.Join(dir, "rf"), touched: map[string]bool{}}
	root := filepath.Join(dir, "ws")
	for _, p := range []string{root, m.ref} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// An initial tree, the same in both.
	for range 4 + m.rng.IntN(10) {
		p := m.randPath(2)
		if m.rng.IntN(3) == 0 {
			os.MkdirAll(filepath.Join(root, p), 0o755)
			os.MkdirAll(filepath.Join(m.ref, p), 0o755)
			continue
		}
		content := m.randBytes()
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		os.MkdirAll(filepath.Dir(filepath.Join(m.ref, p)), 0o755)
		os.WriteFile(filepath.Join(root, p), content, 0o644)
		os.WriteFile(filepath.Join(m.ref, p), content, 0o644)
	}
	if m.rng.IntN(2) == 0 {
		os.Symlink("f.txt", filepath.Join(root, "g"))
		os.Symlink("f.txt", filepath.Join(m.ref, "g"))
	}
	m.env = &viewEnv{t: t, root: root, state: filepath.Join(dir, "state")}
	m.env.bufs = buffers.NewSet()
	m.env.open()
	m.diskWant = diskSnapshot(t, root)
	m.gen = &vfstest.OpGen{Rand: m.rng, Kinds: vfstest.Weighted(v.weights()), Path: m.pick, Data: m.randBytes,
		Modes: filePerms, Flags: openFlags, Slots: 1, Offsets: 30}
	m.ops = map[string]func(vfstest.Op){
		"open": m.opOpen, "writeFile": m.opWriteFile, "readFile": m.opReadFile, "handle": m.opHandle,
		"stat": m.opStat, "readDir": m.opReadDir, "mkdir": m.opMkdir, "remove": m.opRemove,
		"removeAll": m.opRemoveAll, "rename": m.opRename, "rename2": m.opRename2, "symlink": m.opSymlink,
		"readlink": m.opReadlink, "link": m.opLink, "chmod": m.opChmod, "chtimes": m.opChtimes,
		"truncate": m.opTruncate, "mknod": m.opMknod,
		"buffer": func(vfstest.Op) { m.opBuffer() }, "reopen": func(vfstest.Op) { m.reopen() },
		"disk":   func(vfstest.Op) { m.opDisk() },
		"commit": func(vfstest.Op) { m.opCommit(false) }, "commitSome": func(vfstest.Op) { m.opCommit(true) },
		"undo": func(vfstest.Op) { m.opUndo() }, "discard": func(vfstest.Op) { m.opDiscard() },
	}
	m.logf("initial tree: %q", m.refPaths())
	if v.buffers {
		for range m.rng.IntN(3) {
			m.openBuffer()
		}
	}
	return m
}

func (m *model) cleanup() {
	for _, h := range m.handles {
		h.view.Close()
		h.ref.Close()
	}
	m.env.ws.Close()
	os.RemoveAll(m.dir)
}

func (m *model) fail(format string, args ...any) {
	m.t.Helper()
	m.failed = true
	m.t.Errorf(format, args...)
}

func (m *model) logf(format string, args ...any) {
	m.trace = append(m.trace, fmt.Sprintf(format, args...))
	if len(m.trace) > 400 {
		m.trace = m.trace[1:]
	}
}

func (m *model) run(ops int) bool {
	for i := 0; i < ops && !m.failed; i++ {
		m.step()
	}
	if m.failed {
		return false
	}
	for _, h := range m.handles {
		m.closeHandle(h)
	}
	m.handles = nil
	m.compareTrees()
	checkSnapshot(m.t, m.env.root, m.diskWant)
	if m.v.reopen {
		m.reopen()
		m.compareTrees()
	}
	return !m.failed && !m.t.Failed()
}

func (m *model) step() {
	o := m.gen.Next()
	m.ops[o.Kind](o)
}

// weights are how often each operation comes: the buffer, reopen
// and disk operations only in their variants.
func (v modelVariant) weights() map[string]int {
	w := map[string]int{
		"open": 6, "writeFile": 5, "readFile": 3, "handle": 8, "stat": 4, "readDir": 3,
		"mkdir": 3, "remove": 2, "removeAll": 1, "rename": 4, "rename2": 1,
		"symlink": 2, "readlink": 1, "link": 2, "chmod": 1, "chtimes": 1, "truncate": 2, "mknod": 1,
		"commit": 1, "commitSome": 1, "undo": 1, "discard": 1,
	}
	if v.buffers {
		w["buffer"] = 3
	}
	if v.reopen {
		w["reopen"] = 1
	}
	if v.disk {
		w["disk"] = 3
	}
	return w
}

// filePerms are the permissions files are made with.
var filePerms = []fs.FileMode{0o644, 0o600, 0o755, 0o640}

var openFlags = []int{
	os.O_RDONLY,
	os.O_RDWR,
	os.O_WRONLY,
	os.O_RDWR | os.O_CREATE,
	os.O_RDWR | os.O_CREATE | os.O_TRUNC,
	os.O_WRONLY | os.O_CREATE | os.O_EXCL,
	os.O_WRONLY | os.O_APPEND,
	os.O_RDWR | os.O_APPEND | os.O_CREATE,
	os.O_WRONLY | os.O_TRUNC,
}

func flagString(f int) string {
	var s []string
	for _, x := range []struct {
		f    int
		name string
	}{{os.O_WRONLY, "WRONLY"}, {os.O_RDWR, "RDWR"}, {os.O_CREATE, "CREATE"}, {os.O_EXCL, "EXCL"}, {os.O_TRUNC, "TRUNC"}, {os.O_APPEND, "APPEND"}} {
		if f&x.f != 0 {
			s = append(s, x.name)
		}
	}
	if len(s) == 0 {
		return "RDONLY"
	}
	return strings.Join(s, "|")
}
