//go:build linux

package overlay_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/buffers"
	"github.com/draftfs/draftfs/overlay"
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
		"disk": func(vfstest.Op) { m.opDisk() },
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

// randPath is a path of up to depth elements from modelNames.
func (m *model) randPath(depth int) string {
	n := 1 + m.rng.IntN(depth)
	elems := make([]string, n)
	for i := range elems {
		elems[i] = modelNames[m.rng.IntN(len(modelNames))]
	}
	return strings.Join(elems, "/")
}

// pick is a path for an operation: mostly one that exists.
func (m *model) pick() string {
	if m.rng.IntN(10) < 7 {
		if all := m.refPaths(); len(all) > 0 {
			return all[m.rng.IntN(len(all))]
		}
	}
	return m.randPath(3)
}

func (m *model) randBytes() []byte {
	b := make([]byte, m.rng.IntN(40))
	for i := range b {
		b[i] = "abcdefgh\n"[m.rng.IntN(9)]
	}
	return b
}

func (m *model) randPerm(dir bool) fs.FileMode {
	if dir {
		return []fs.FileMode{0o755, 0o700, 0o750}[m.rng.IntN(3)]
	}
	return filePerms[m.rng.IntN(len(filePerms))]
}

// refPaths lists the reference tree, sorted.
func (m *model) refPaths() []string {
	var out []string
	filepath.WalkDir(m.ref, func(p string, de fs.DirEntry, err error) error {
		if err == nil && p != m.ref {
			rel, _ := filepath.Rel(m.ref, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

func (m *model) r(p string) string {
	if p == "" {
		return m.ref
	}
	return filepath.Join(m.ref, filepath.FromSlash(p))
}

// plain reports whether the os package and the view resolve p alike:
// no symlink among its parents, and, when follow, a final symlink chain
// that stays inside the tree and meets no symlink but at its ends. The
// view takes names with only the final element as a symlink (front ends
// resolve the rest: the kernel, or Resolve); other paths are skipped.
// It returns the path the chain ends at.
func (m *model) plain(p string, follow bool) (string, bool) {
	for hops := 0; ; hops++ {
		for q := parentOfKey(p); q != ""; q = parentOfKey(q) {
			if fi, err := os.Lstat(m.r(q)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return "", false
			}
		}
		fi, err := os.Lstat(m.r(p))
		if !follow || err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return p, true
		}
		if hops > 10 {
			return p, true // a loop: ELOOP on both sides
		}
		target, err := os.Readlink(m.r(p))
		if err != nil {
			return "", false
		}
		next, ok := m.linkKey(parentOfKey(p), target)
		if !ok {
			return "", false
		}
		p = next
	}
}

// linkKey is where a symlink in dir with target leads, when the walk
// there meets no symlink before its end and stays in the tree.
func (m *model) linkKey(dir, target string) (string, bool) {
	if path.IsAbs(target) {
		rest, ok := strings.CutPrefix(target, filepath.ToSlash(m.ref)+"/")
		if !ok {
			return "", false
		}
		dir, target = "", rest
	}
	var elems []string
	if dir != "" {
		elems = strings.Split(dir, "/")
	}
	parts := strings.Split(target, "/")
	for i, e := range parts {
		switch e {
		case "", ".":
			continue
		case "..":
			if len(elems) == 0 {
				return "", false
			}
			elems = elems[:len(elems)-1]
			continue
		}
		elems = append(elems, e)
		if i < len(parts)-1 {
			if fi, err := os.Lstat(m.r(strings.Join(elems, "/"))); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return "", false
			}
		}
	}
	return strings.Join(elems, "/"), true
}

func parentOfKey(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// touch records that the view changed p (or was asked to).
func (m *model) touch(ps ...string) {
	for _, p := range ps {
		m.touched[p] = true
		if q, ok := m.plain(p, true); ok {
			m.touched[q] = true
		}
	}
}

// untouched reports whether no changing operation named p, one of its
// parents, or (for a directory) anything below it.
func (m *model) untouched(p string) bool {
	for q := range m.touched {
		if q == p || strings.HasPrefix(p, q+"/") || strings.HasPrefix(q, p+"/") || q == "" {
			return false
		}
	}
	return true
}

// same compares the errors of the two sides.
func (m *model) same(op string, verr, rerr error) bool {
	m.t.Helper()
	m.logf("%s: view %v, ref %v", op, verr, rerr)
	if errnoOf(verr) != errnoOf(rerr) {
		m.fail("%s: view error %v (%v), reference %v (%v)", op, verr, errnoOf(verr), rerr, errnoOf(rerr))
		return false
	}
	if verr != nil {
		var pe *fs.PathError
		if !errors.As(verr, &pe) && !errors.Is(verr, io.EOF) && !strings.Contains(verr.Error(), "O_APPEND") {
			m.fail("%s: view error %v (%T) is not a *fs.PathError", op, verr, verr)
			return false
		}
	}
	return verr == nil
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

func (m *model) opOpen(o vfstest.Op) {
	p, flag := o.P, o.Flag
	follow := flag&(os.O_CREATE|os.O_EXCL) != os.O_CREATE|os.O_EXCL
	if _, ok := m.plain(p, follow); !ok {
		return
	}
	if follow && m.fifo(p) {
		return
	}
	perm := o.Mode
	if flag != os.O_RDONLY {
		m.touch(p)
	}
	vf, verr := m.env.v.OpenFile(p, flag, perm)
	rf, rerr := os.OpenFile(m.r(p), flag, perm)
	if !m.same(fmt.Sprintf("open %s %s %v", p, flagString(flag), perm), verr, rerr) {
		if verr == nil {
			vf.Close()
		}
		if rerr == nil {
			rf.Close()
		}
		return
	}
	fi, _ := rf.Stat()
	m.opened++
	m.logf("handle #%d is %s", m.opened, p)
	m.handles = append(m.handles, &handlePair{key: p, path: fmt.Sprintf("#%d %s", m.opened, p), flag: flag, view: vf, ref: rf, isDir: fi.IsDir()})
	if len(m.handles) > 4 {
		m.closeHandle(m.handles[0])
		m.handles = m.handles[1:]
	}
}

func (m *model) closeHandle(h *handlePair) {
	verr, rerr := h.view.Close(), h.ref.Close()
	m.same("close "+h.path, verr, rerr)
}

func (m *model) opHandle(o vfstest.Op) {
	if len(m.handles) == 0 {
		m.opOpen(o)
		return
	}
	i := m.rng.IntN(len(m.handles))
	h := m.handles[i]
	switch m.rng.IntN(9) {
	case 0, 1: // write at an offset
		// Not empty: os.File.WriteAt of nothing succeeds without asking
		// the kernel, even on a read-only descriptor.
		b, off := append(o.Data, 'z'), o.Offset
		vn, verr := h.view.WriteAt(b, off)
		rn, rerr := h.ref.WriteAt(b, off)
		if m.same(fmt.Sprintf("writeat %s %d %q", h.path, off, b), verr, rerr) && vn != rn {
			m.fail("writeat %s: view wrote %d, reference %d", h.path, vn, rn)
		}
	case 2, 3: // write at the handle's offset (the end, with O_APPEND)
		b := o.Data
		vn, verr := h.view.Write(b)
		rn, rerr := h.ref.Write(b)
		if m.same(fmt.Sprintf("write %s %q", h.path, b), verr, rerr) && vn != rn {
			m.fail("write %s: view wrote %d, reference %d", h.path, vn, rn)
		}
	case 4: // read at an offset
		off, n := int64(m.rng.IntN(40)), 1+m.rng.IntN(40)
		vb, rb := make([]byte, n), make([]byte, n)
		vn, verr := h.view.ReadAt(vb, off)
		rn, rerr := h.ref.ReadAt(rb, off)
		m.same(fmt.Sprintf("readat %s %d %d", h.path, off, n), verr, rerr)
		if vn != rn || !bytes.Equal(vb[:vn], rb[:rn]) || (verr == io.EOF) != (rerr == io.EOF) {
			m.fail("readat %s %d: view %q %v, reference %q %v", h.path, off, vb[:vn], verr, rb[:rn], rerr)
		}
	case 5: // read at the handle's offset
		n := 1 + m.rng.IntN(40)
		vb, rb := make([]byte, n), make([]byte, n)
		vn, verr := h.view.Read(vb)
		rn, rerr := h.ref.Read(rb)
		m.same(fmt.Sprintf("read %s %d", h.path, n), verr, rerr)
		if vn != rn || !bytes.Equal(vb[:vn], rb[:rn]) || (verr == io.EOF) != (rerr == io.EOF) {
			m.fail("read %s: view %q %v, reference %q %v", h.path, vb[:vn], verr, rb[:rn], rerr)
		}
	case 6: // seek
		off, whence := int64(m.rng.IntN(20)), m.rng.IntN(3)
		if h.isDir {
			off, whence = 0, io.SeekStart
		}
		vo, verr := h.view.Seek(off, whence)
		ro, rerr := h.ref.Seek(off, whence)
		if m.same(fmt.Sprintf("seek %s %d %d", h.path, off, whence), verr, rerr) && vo != ro {
			m.fail("seek %s: view at %d, reference at %d", h.path, vo, ro)
		}
	case 7: // truncate
		size := int64(m.rng.IntN(30))
		verr, rerr := h.view.Truncate(size), h.ref.Truncate(size)
		m.same(fmt.Sprintf("ftruncate %s %d", h.path, size), verr, rerr)
	case 8: // stat, or close
		if m.rng.IntN(2) == 0 {
			m.closeHandle(h)
			m.handles = slices.Delete(m.handles, i, i+1)
			return
		}
		vfi, verr := h.view.Stat()
		rfi, rerr := h.ref.Stat()
		if m.same("fstat "+h.path, verr, rerr) {
			m.compareInfo("fstat "+h.path, vfi, rfi, true)
		}
	}
}

func (m *model) opWriteFile(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, true); !ok || m.fifo(p) {
		return
	}
	m.touch(p)
	b := o.Data
	flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if m.rng.IntN(3) == 0 {
		flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	write := func(f afero.File, err error) error {
		if err != nil {
			return err
		}
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	// The ctime is not compared: opening a lower file for writing makes
	// the draft's copy, a new file, even when nothing is written.
	verr := write(m.env.v.OpenFile(p, flag, 0o644))
	rf, rerr := os.OpenFile(m.r(p), flag, 0o644)
	if rerr == nil {
		rerr = write(rf, nil)
	}
	m.same(fmt.Sprintf("writefile %s %s %q", p, flagString(flag), b), verr, rerr)
}

func (m *model) opReadFile(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, true); !ok || m.fifo(p) {
		return
	}
	vb, verr := readAll(m.env.v, p)
	rb, rerr := os.ReadFile(m.r(p))
	if m.same("readfile "+p, verr, rerr) && !bytes.Equal(vb, rb) {
		m.fail("readfile %s: view %q, reference %q", p, vb, rb)
	}
}

func (m *model) opStat(o vfstest.Op) {
	p := o.P
	follow := m.rng.IntN(2) == 0
	if _, ok := m.plain(p, follow); !ok {
		return
	}
	var vfi, rfi fs.FileInfo
	var verr, rerr error
	if follow {
		vfi, verr = m.env.v.Stat(p)
		rfi, rerr = os.Stat(m.r(p))
	} else {
		vfi, verr = m.env.v.Lstat(p)
		rfi, rerr = os.Lstat(m.r(p))
	}
	op := fmt.Sprintf("stat(follow=%v) %s", follow, p)
	if m.same(op, verr, rerr) {
		m.compareInfo(op, vfi, rfi, true)
		m.compareDirLinks(op, vfi, rfi)
	}
}

// compareDirLinks compares a directory's link count: 2 and one per
// subdirectory, on the reference's file system as on the disk's.
func (m *model) compareDirLinks(op string, vfi, rfi fs.FileInfo) {
	m.t.Helper()
	if !rfi.IsDir() {
		return
	}
	va, ok := vfi.Sys().(*overlay.Attr)
	if !ok {
		m.fail("%s: Sys() is %T", op, vfi.Sys())
		return
	}
	if rn := rfi.Sys().(*syscall.Stat_t).Nlink; uint64(va.Nlink) != rn {
		m.fail("%s: view directory nlink %d, reference %d", op, va.Nlink, rn)
	}
}

// compareInfo compares type, permissions, size (not of directories) and
// the link count of files.
func (m *model) compareInfo(op string, vfi, rfi fs.FileInfo, names bool) {
	m.t.Helper()
	if vfi.Mode() != rfi.Mode() {
		m.fail("%s: view mode %v, reference %v", op, vfi.Mode(), rfi.Mode())
	}
	if !rfi.IsDir() && vfi.Size() != rfi.Size() {
		m.fail("%s: view size %d, reference %d", op, vfi.Size(), rfi.Size())
	}
	if names && vfi.Name() != rfi.Name() {
		m.fail("%s: view name %q, reference %q", op, vfi.Name(), rfi.Name())
	}
	if rfi.Mode().IsRegular() {
		va, ok := vfi.Sys().(*overlay.Attr)
		if !ok {
			m.fail("%s: Sys() is %T", op, vfi.Sys())
			return
		}
		if rn := rfi.Sys().(*syscall.Stat_t).Nlink; uint64(va.Nlink) != rn {
			m.fail("%s: view nlink %d, reference %d", op, va.Nlink, rn)
		}
	}
}

func (m *model) opReadDir(o vfstest.Op) {
	p := o.P
	if m.rng.IntN(4) == 0 {
		p = ""
	}
	if _, ok := m.plain(p, true); !ok {
		return
	}
	vents, verr := m.env.v.ReadDir(p)
	rents, rerr := os.ReadDir(m.r(p))
	if !m.same("readdir "+p, verr, rerr) {
		return
	}
	if got, want := dirString(vents), dirString(rents); got != want {
		m.fail("readdir %s: view %s, reference %s", p, got, want)
	}
}

func dirString(ents []fs.DirEntry) string {
	var b strings.Builder
	for _, e := range ents {
		fmt.Fprintf(&b, "%s:%v ", e.Name(), e.Type())
	}
	return b.String()
}

func (m *model) opMkdir(o vfstest.Op) {
	p := o.P
	if m.rng.IntN(2) == 0 {
		p = m.randPath(3)
	}
	if _, ok := m.plain(p, false); !ok {
		return
	}
	m.touch(p)
	perm := m.randPerm(true)
	if m.rng.IntN(3) == 0 {
		for q := p; q != ""; q = parentOfKey(q) {
			m.touch(q)
		}
		verr := m.env.v.MkdirAll(p, perm)
		rerr := os.MkdirAll(m.r(p), perm)
		m.same(fmt.Sprintf("mkdirall %s %v", p, perm), verr, rerr)
		return
	}
	verr := m.env.v.Mkdir(p, perm)
	rerr := os.Mkdir(m.r(p), perm)
	m.same(fmt.Sprintf("mkdir %s %v", p, perm), verr, rerr)
}

func (m *model) opRemove(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, false); !ok {
		return
	}
	m.touch(p)
	var verr, rerr error
	var op string
	switch m.rng.IntN(3) {
	case 0:
		op, verr, rerr = "remove", m.env.v.Remove(p), os.Remove(m.r(p))
	case 1:
		op, verr, rerr = "unlink", m.env.v.Unlink(p), syscallErr("unlink", p, syscall.Unlink(m.r(p)))
	case 2:
		op, verr, rerr = "rmdir", m.env.v.Rmdir(p), syscallErr("rmdir", p, syscall.Rmdir(m.r(p)))
	}
	m.same(op+" "+p, verr, rerr)
}

func syscallErr(op, p string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: p, Err: err}
}

func (m *model) opRemoveAll(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, false); !ok || p == "" || m.specialParent(p) {
		return
	}
	m.touch(p)
	m.same("removeall "+p, m.env.v.RemoveAll(p), os.RemoveAll(m.r(p)))
}

func (m *model) opRename(o vfstest.Op) {
	a, b := o.P, o.Q
	switch m.rng.IntN(4) {
	case 0:
		b = m.randPath(3)
	case 1:
		b = a + "/" + modelNames[m.rng.IntN(len(modelNames))] // into itself
	}
	m.rename(a, b, 0)
}

func (m *model) opRename2(o vfstest.Op) {
	a, b := o.P, o.Q
	flags := overlay.RenameNoReplace
	if m.rng.IntN(2) == 0 {
		flags = overlay.RenameExchange
	}
	m.rename(a, b, flags)
}

func (m *model) rename(a, b string, flags overlay.RenameFlags) {
	if _, ok := m.plain(a, false); !ok {
		return
	}
	if _, ok := m.plain(b, false); !ok {
		return
	}
	m.touch(a, b)
	var rflags uint
	if flags&overlay.RenameNoReplace != 0 {
		rflags |= unix.RENAME_NOREPLACE
	}
	if flags&overlay.RenameExchange != 0 {
		rflags |= unix.RENAME_EXCHANGE
	}
	moved := [][2]string{{a, b}}
	if flags&overlay.RenameExchange != 0 {
		moved = append(moved, [2]string{b, a})
	}
	m.ctimeMoves(func() bool {
		verr := m.env.v.Rename2(a, b, flags)
		rerr := syscallErr("rename", a, unix.Renameat2(unix.AT_FDCWD, m.r(a), unix.AT_FDCWD, m.r(b), rflags))
		return m.same(fmt.Sprintf("rename %s %s flags %d", a, b, flags), verr, rerr)
	}, moved...)
}

func (m *model) opSymlink(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, false); !ok {
		return
	}
	m.touch(p)
	target := m.randPath(2)
	var vtarget, rtarget string
	switch m.rng.IntN(3) {
	case 0: // absolute, inside the tree
		vtarget, rtarget = m.env.root+"/"+target, m.ref+"/"+target
	case 1: // relative, climbing
		vtarget = strings.Repeat("../", strings.Count(p, "/")) + target
		rtarget = vtarget
	default:
		vtarget, rtarget = target, target
	}
	verr := m.env.v.Symlink(vtarget, p)
	rerr := os.Symlink(rtarget, m.r(p))
	m.same(fmt.Sprintf("symlink %s -> %s", p, vtarget), verr, rerr)
}

func (m *model) opReadlink(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, false); !ok {
		return
	}
	vt, verr := m.env.v.Readlink(p)
	rt, rerr := os.Readlink(m.r(p))
	if m.same("readlink "+p, verr, rerr) && m.viewTarget(rt) != vt {
		m.fail("readlink %s: view %q, reference %q", p, vt, rt)
	}
}

// viewTarget is the view's form of a reference symlink target.
func (m *model) viewTarget(t string) string {
	if rest, ok := strings.CutPrefix(t, m.ref+"/"); ok {
		return m.env.root + "/" + rest
	}
	return t
}

func (m *model) opLink(o vfstest.Op) {
	a, b := o.P, o.Q
	if m.rng.IntN(2) == 0 {
		b = m.randPath(3)
	}
	if _, ok := m.plain(a, false); !ok {
		return
	}
	if _, ok := m.plain(b, false); !ok {
		return
	}
	m.touch(a, b)
	m.ctimeMoves(func() bool {
		verr := m.env.v.Link(a, b)
		rerr := syscallErr("link", a, syscall.Link(m.r(a), m.r(b)))
		return m.same(fmt.Sprintf("link %s %s", a, b), verr, rerr)
	}, [2]string{a, a})
}

func (m *model) opChmod(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, true); !ok {
		return
	}
	m.touch(p)
	perm := m.randPerm(m.rng.IntN(2) == 0)
	m.ctimeMoves(func() bool {
		return m.same(fmt.Sprintf("chmod %s %v", p, perm), m.env.v.Chmod(p, perm), os.Chmod(m.r(p), perm))
	}, [2]string{p, p})
}

func (m *model) opChtimes(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, true); !ok {
		return
	}
	m.touch(p)
	at := time.Unix(int64(m.rng.IntN(1<<30)), int64(m.rng.IntN(1e9)))
	mt := time.Unix(int64(m.rng.IntN(1<<30)), int64(m.rng.IntN(1e9)))
	if !m.ctimeMoves(func() bool {
		return m.same("chtimes "+p, m.env.v.Chtimes(p, at, mt), os.Chtimes(m.r(p), at, mt))
	}, [2]string{p, p}) {
		return
	}
	vfi, verr := m.env.v.Stat(p)
	rfi, rerr := os.Stat(m.r(p))
	if m.same("stat after chtimes "+p, verr, rerr) && !vfi.ModTime().Equal(rfi.ModTime()) {
		m.fail("chtimes %s: view mtime %v, reference %v", p, vfi.ModTime(), rfi.ModTime())
	}
}

func (m *model) opTruncate(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, true); !ok {
		return
	}
	m.touch(p)
	size := o.Offset
	m.ctimeMoves(func() bool {
		return m.same(fmt.Sprintf("truncate %s %d", p, size), m.env.v.Truncate(p, size), os.Truncate(m.r(p), size))
	}, [2]string{p, p})
}

// reopen restarts the engine: open handles go, as with a daemon that
// stopped; the buffers stay.
func (m *model) reopen() {
	for _, h := range m.handles {
		m.closeHandle(h)
	}
	m.handles = nil
	m.logf("reopen")
	m.env.reopen()
}

// untouchedPaths lists the regular files (wantFile) or the directories
// of the reference that no changing operation of the view reached.
func (m *model) untouchedPaths(wantFile bool) []string {
	var out []string
	for _, p := range append(m.refPaths(), "") {
		if !m.untouched(p) && p != "" {
			continue
		}
		fi, err := os.Lstat(m.r(p))
		if err != nil {
			continue
		}
		if wantFile && fi.Mode().IsRegular() || !wantFile && fi.IsDir() {
			out = append(out, p)
		}
	}
	return out
}

// newNameIn is a name in dir that nothing holds and nothing touched.
func (m *model) newNameIn(dir string) (string, bool) {
	if dir != "" && !m.untouched(dir) {
		return "", false
	}
	p := path.Join(dir, modelNames[m.rng.IntN(len(modelNames))])
	if _, err := os.Lstat(m.r(p)); err == nil || !m.untouched(p) {
		return "", false
	}
	if _, ok := m.env.bufs.Get(p); ok {
		return "", false
	}
	return p, true
}

// openBuffer opens an editor buffer over an untouched file, or for a new
// file in an untouched directory: the view shows its text, and so does
// the reference, as if the editor had saved it.
func (m *model) openBuffer() {
	var p string
	if files := m.untouchedPaths(true); len(files) > 0 && m.rng.IntN(3) > 0 {
		p = files[m.rng.IntN(len(files))]
	} else if dirs := m.untouchedPaths(false); len(dirs) > 0 {
		var ok bool
		if p, ok = m.newNameIn(dirs[m.rng.IntN(len(dirs))]); !ok {
			return
		}
	} else {
		return
	}
	text := m.randBytes()
	m.version++
	m.logf("buffer open %s %q", p, text)
	if err := m.env.bufs.Open(p, m.version, text); err != nil {
		m.fail("buffer open %s: %v", p, err)
		return
	}
	if err := writeInPlace(m.r(p), text); err != nil {
		m.fail("reference: %v", err)
	}
}

// writeInPlace rewrites a file keeping its inode (as an editor saving in
// place does), creating it 0644 if missing.
func writeInPlace(p string, b []byte) error {
	return os.WriteFile(p, b, 0o644)
}

func (m *model) opBuffer() {
	var open []string
	for _, b := range m.env.bufs.List() {
		if m.untouched(b.Path) {
			open = append(open, b.Path)
		}
	}
	if len(open) == 0 || m.rng.IntN(3) == 0 {
		m.openBuffer()
		return
	}
	p := open[m.rng.IntN(len(open))]
	switch m.rng.IntN(3) {
	case 0: // the user types
		text := m.randBytes()
		m.version++
		m.logf("buffer change %s %q", p, text)
		if _, err := m.env.bufs.Replace(p, m.version, text); err != nil {
			m.fail("buffer change %s: %v", p, err)
		}
		if err := writeInPlace(m.r(p), text); err != nil {
			m.fail("reference: %v", err)
		}
	case 1: // the editor saves: the disk gets the text
		s, _ := m.env.bufs.Get(p)
		m.logf("buffer save %s", p)
		if err := writeInPlace(m.env.disk(p), s.Text); err != nil {
			m.fail("save %s: %v", p, err)
		}
		if err := m.env.bufs.Save(p); err != nil {
			m.fail("buffer save %s: %v", p, err)
		}
		m.diskWant = diskSnapshot(m.t, m.env.root)
	case 2: // closed without saving: the disk shows again
		if _, err := os.Lstat(m.env.disk(p)); err != nil && m.opensOf(p) {
			// A handle on a file only the editor had keeps the text it
			// last read, not the text the editor last had: skipped.
			return
		}
		m.logf("buffer close %s", p)
		if err := m.env.bufs.Close(p); err != nil {
			m.fail("buffer close %s: %v", p, err)
		}
		b, err := os.ReadFile(m.env.disk(p))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			err = os.Remove(m.r(p))
		case err == nil:
			err = writeInPlace(m.r(p), b)
		}
		if err != nil {
			m.fail("reference: %v", err)
		}
	}
}

// opensOf reports whether a handle is open on p.
func (m *model) opensOf(p string) bool {
	for _, h := range m.handles {
		if h.key == p {
			return true
		}
	}
	return false
}

// opDisk changes the disk under the draft, where the draft has nothing
// and no buffer hides the disk, and the reference likewise.
func (m *model) opDisk() {
	dirty := func(p string) bool {
		s, ok := m.env.bufs.Get(p)
		return ok && s.Dirty
	}
	files, dirs := m.untouchedPaths(true), m.untouchedPaths(false)
	both := func(what string, fn func(root string) error) {
		m.logf("disk: %s", what)
		for _, root := range []string{m.env.root, m.ref} {
			if err := fn(root); err != nil {
				m.fail("disk %s: %v", what, err)
			}
		}
		m.diskWant = diskSnapshot(m.t, m.env.root)
	}
	switch m.rng.IntN(4) {
	case 0: // a file changes
		if len(files) == 0 {
			return
		}
		p := files[m.rng.IntN(len(files))]
		if dirty(p) {
			return
		}
		b := m.randBytes()
		both(fmt.Sprintf("write %s %q", p, b), func(root string) error {
			return writeInPlace(filepath.Join(root, p), b)
		})
	case 1: // a file appears
		if len(dirs) == 0 {
			return
		}
		p, ok := m.newNameIn(dirs[m.rng.IntN(len(dirs))])
		if !ok {
			return
		}
		b := m.randBytes()
		both(fmt.Sprintf("create %s %q", p, b), func(root string) error {
			return os.WriteFile(filepath.Join(root, p), b, 0o644)
		})
	case 2: // a directory appears
		if len(dirs) == 0 {
			return
		}
		p, ok := m.newNameIn(dirs[m.rng.IntN(len(dirs))])
		if !ok {
			return
		}
		both("mkdir "+p, func(root string) error { return os.Mkdir(filepath.Join(root, p), 0o755) })
	case 3: // a file or an empty directory goes
		cands := append(files, dirs...)
		if len(cands) == 0 {
			return
		}
		p := cands[m.rng.IntN(len(cands))]
		if p == "" || dirty(p) {
			return
		}
		if _, ok := m.env.bufs.Get(p); ok {
			return
		}
		if ents, _ := os.ReadDir(m.env.disk(p)); len(ents) > 0 {
			return
		}
		if ents, _ := os.ReadDir(m.r(p)); len(ents) > 0 {
			return
		}
		both("remove "+p, func(root string) error { return os.Remove(filepath.Join(root, p)) })
	}
}

// compareTrees walks both trees and compares every path.
func (m *model) compareTrees() {
	m.t.Helper()
	var walk func(p string)
	walk = func(p string) {
		vents, verr := m.env.v.ReadDir(p)
		rents, rerr := os.ReadDir(m.r(p))
		if !m.same("final readdir "+p, verr, rerr) {
			return
		}
		if got, want := dirString(vents), dirString(rents); got != want {
			m.fail("final tree %q: view %s, reference %s", p, got, want)
			return
		}
		for _, re := range rents {
			k := path.Join(p, re.Name())
			vfi, verr := m.env.v.Lstat(k)
			rfi, rerr := os.Lstat(m.r(k))
			if !m.same("final lstat "+k, verr, rerr) {
				continue
			}
			m.compareInfo("final "+k, vfi, rfi, true)
			switch {
			case rfi.IsDir():
				walk(k)
			case rfi.Mode()&fs.ModeSymlink != 0:
				vt, verr := m.env.v.Readlink(k)
				rt, rerr := os.Readlink(m.r(k))
				if m.same("final readlink "+k, verr, rerr) && vt != m.viewTarget(rt) {
					m.fail("final symlink %s: view -> %q, reference -> %q", k, vt, rt)
				}
			case rfi.Mode().IsRegular() && rfi.Mode().Perm()&0o400 != 0:
				vb, verr := readAll(m.env.v, k)
				rb, rerr := os.ReadFile(m.r(k))
				if m.same("final read "+k, verr, rerr) && !bytes.Equal(vb, rb) {
					m.fail("final content %s: view %q, reference %q", k, vb, rb)
				}
			}
		}
	}
	walk("")
}

// opMknod makes a FIFO or a socket. Not a device node: the reference
// would open one, where the view never opens a special file.
func (m *model) opMknod(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, false); !ok {
		return
	}
	m.touch(p)
	typ, ifmt := fs.ModeNamedPipe, uint32(unix.S_IFIFO)
	if m.rng.IntN(2) == 0 {
		typ, ifmt = fs.ModeSocket, unix.S_IFSOCK
	}
	perm := o.Mode
	verr := m.env.v.Mknod(p, typ|perm, 0)
	rerr := syscallErr("mknod", p, unix.Mknod(m.r(p), ifmt|uint32(perm), 0))
	m.same(fmt.Sprintf("mknod %s %v", p, typ|perm), verr, rerr)
}

// fifo reports whether p leads to a FIFO in the reference, which an
// open there would wait on.
// specialParent reports whether p's parent is a FIFO or a socket:
// os.RemoveAll opens the parent with open(2), which a socket answers
// with ENXIO and a FIFO blocks, where the view says ENOTDIR.
func (m *model) specialParent(p string) bool {
	fi, err := os.Lstat(m.r(parentOfKey(p)))
	return err == nil && fi.Mode()&(fs.ModeNamedPipe|fs.ModeSocket) != 0
}

func (m *model) fifo(p string) bool {
	fi, err := os.Stat(m.r(p))
	return err == nil && fi.Mode()&fs.ModeNamedPipe != 0
}

// ctimeTick is longer than a tick of the kernel's coarse clock.
const ctimeTick = 20 * time.Millisecond

// ctimeMoves runs op, which reports whether it did the same on both
// sides, and then requires the ctime of each object moved (named by
// the path before and the path after op) to have moved on both sides or
// on neither: the values differ (the view's objects were made at other
// times), their movement must not. It returns op's report.
func (m *model) ctimeMoves(op func() bool, moved ...[2]string) bool {
	m.t.Helper()
	ctime := func(p string) (v, r time.Time, ok bool) {
		vfi, verr := m.env.v.Lstat(p)
		rfi, rerr := os.Lstat(m.r(p))
		if verr != nil || rerr != nil {
			return v, r, false
		}
		rst := rfi.Sys().(*syscall.Stat_t)
		return vfi.Sys().(*overlay.Attr).Ctime, time.Unix(rst.Ctim.Unix()), true
	}
	type times struct {
		v, r time.Time
		ok   bool
	}
	before := make([]times, len(moved))
	for i, pair := range moved {
		before[i].v, before[i].r, before[i].ok = ctime(pair[0])
	}
	if !op() {
		return false
	}
	for i, pair := range moved {
		v, r, ok := ctime(pair[1])
		if !ok || !before[i].ok {
			continue
		}
		// The kernel stamps files with a clock that ticks every few
		// milliseconds (finer only for a file whose ctime was read since
		// its last change), the engine some times with its own: a
		// movement is only told apart from none across a tick.
		if time.Since(before[i].v) < ctimeTick {
			continue
		}
		if vm, rm := v.After(before[i].v), r.After(before[i].r); vm != rm {
			m.fail("ctime of %s (now %s): moved in the view %v, in the reference %v", pair[0], pair[1], vm, rm)
		}
	}
	return true
}
