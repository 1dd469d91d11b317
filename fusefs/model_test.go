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
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/draftfs/draftfs/overlay/vfstest"
)

// TestDifferential applies the same random operations to the mount and
// to a plain directory that started with the same files: every result
// (the errno, what a read returns, link counts, whether an object kept
// its inode number) and the final trees must agree. Some operations go
// through descriptors held open across others (unlink or rename over an
// open file, writes after that). Set DRAFTFS_SEED to replay a seed, and
// DRAFTFS_STEPS to run only some of its steps (see onlySteps).
func TestDifferential(t *testing.T) {
	// 1-8, then seeds that found bugs (in either mode).
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 10, 17, 25, 27, 63, 65, 77, 86, 3001, 3373, 3476}
	if s := os.Getenv("DRAFTFS_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seeds = []uint64{seed}
	}
	steps := 400
	if testing.Short() {
		steps = 100
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { differential(t, seed, steps) })
	}
}

// names is the namespace the operations draw paths from.
var names = []string{"a", "b", "c", "d", "d/a", "d/b", "d/e", "d/e/a", "e", "e/a", "e/b"}

// slots is how many descriptors a side holds open at most.
const slots = 3

// side is one of the two trees an operation runs on.
type side struct {
	root string
	held [slots]*os.File
	// readOnly: the held descriptor was opened read-only
	readOnly [slots]bool
	// frozen: the mount is in passthrough mode, where a descriptor
	// opened read-only reads the file it opened while a write through
	// the mount copies the path up or replaces its file (see the package
	// documentation): what such a descriptor reads is not compared, nor
	// its size (its other attributes are). Set alike on both sides.
	frozen bool
}

func (s *side) closeAll() {
	for i, f := range s.held {
		if f != nil {
			f.Close()
			s.held[i] = nil
		}
	}
}

func differential(t *testing.T, seed uint64, steps int) {
	initial := map[string]string{"a": "alpha\n", "d/a": "delta a\n", "d/e/a": "deep\n", "e/": ""}
	m := testMount(t, mountOptions{files: initial})
	mount, plain := &side{root: m.mnt, frozen: m.passthrough}, &side{root: t.TempDir(), frozen: m.passthrough}
	defer mount.closeAll()
	defer plain.closeAll()
	writeTree(t, plain.root, initial)
	gen := newOpGen(rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
	only := onlySteps(t)
	var trace []string
	for i := range steps {
		op := gen.Next()
		if only != nil && !only[i] {
			continue
		}
		ctimes := ctimesAround(op, mount, plain)
		got := apply(op, mount)
		want := apply(op, plain)
		trace = append(trace, fmt.Sprintf("%d: %s: %s", i, op, want))
		if got != want {
			t.Fatalf("seed %d step %d: %s: mount %s, plain directory %s (replay with DRAFTFS_SEED=%d)\nsteps so far:\n%s",
				seed, i, op, got, want, seed, strings.Join(trace[max(0, len(trace)-30):], "\n"))
		}
		if msg := ctimes(); msg != "" && strings.HasPrefix(want, "ok") {
			t.Fatalf("seed %d step %d: %s: %s (replay with DRAFTFS_SEED=%d)", seed, i, op, msg, seed)
		}
	}
	mount.closeAll()
	plain.closeAll()
	if diff := diffSnapshots(snapshot(t, plain.root), snapshot(t, m.mnt)); len(diff) > 0 {
		t.Fatalf("seed %d: final trees differ: %v", seed, diff)
	}
}

// onlySteps reads DRAFTFS_STEPS, a comma-separated list of the step
// numbers to run (the others are drawn but skipped), for cutting a
// failing seed down to the steps that matter; nil when unset.
func onlySteps(t *testing.T) map[int]bool {
	v := os.Getenv("DRAFTFS_STEPS")
	if v == "" {
		return nil
	}
	only := map[int]bool{}
	for _, f := range strings.Split(v, ",") {
		i, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("DRAFTFS_STEPS=%q: %v", v, err)
		}
		only[i] = true
	}
	return only
}

// differentialKinds are the operations TestDifferential draws, each as
// often as it is listed.
var differentialKinds = []string{"write", "write", "append", "read", "read", "mkdir", "rmdir", "remove", "rename", "rename", "symlink", "link", "chmod", "truncate", "readdir", "stat",
	"open", "open", "hwrite", "hwrite", "hread", "hread", "hstat", "htruncate", "hclose", "mkfifo", "mksock"}

// newOpGen draws TestDifferential's operations from rng.
func newOpGen(rng *rand.Rand) *vfstest.OpGen {
	return &vfstest.OpGen{
		Rand:    rng,
		Kinds:   differentialKinds,
		Path:    func() string { return names[rng.IntN(len(names))] },
		Modes:   []os.FileMode{0o600, 0o644, 0o755, 0o700},
		Flags:   []int{os.O_RDONLY, os.O_RDWR, os.O_RDWR | os.O_APPEND, os.O_WRONLY | os.O_CREATE | os.O_TRUNC, os.O_RDWR | os.O_CREATE | os.O_EXCL},
		Slots:   slots,
		Offsets: 12,
	}
}

// apply runs the operation on s and describes its outcome.
func apply(o vfstest.Op, s *side) string {
	p, q := filepath.Join(s.root, o.P), filepath.Join(s.root, o.Q)
	if strings.HasPrefix(o.Kind, "h") && o.Kind != "hclose" && s.held[o.Slot] == nil {
		return "no descriptor"
	}
	f := s.held[o.Slot]
	frozen := s.frozen && s.readOnly[o.Slot]
	switch o.Kind {
	case "write", "append", "read", "open":
		if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
			return "a FIFO, not opened" // the open would wait for a peer
		}
	}
	var err error
	switch o.Kind {
	case "mkfifo":
		err = syscall.Mkfifo(p, uint32(o.Mode))
	case "mksock":
		err = syscall.Mknod(p, syscall.S_IFSOCK|uint32(o.Mode), 0)
	case "write":
		before := inoAt(p)
		if err = os.WriteFile(p, o.Data, 0o644); err == nil {
			return "ok" + sameIno(before, inoAt(p))
		}
	case "append":
		var f *os.File
		if f, err = os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			_, err = f.Write(o.Data)
			f.Close()
		}
	case "read":
		var b []byte
		if b, err = os.ReadFile(p); err == nil {
			return "read " + strconv.Quote(string(b))
		}
	case "mkdir":
		err = os.Mkdir(p, o.Mode|0o700)
	case "rmdir":
		err = syscall.Rmdir(p)
	case "remove":
		err = syscall.Unlink(p)
	case "rename":
		before := inoAt(p)
		if err = syscall.Rename(p, q); err == nil { // os.Rename refuses to replace a directory
			return "ok" + sameIno(before, inoAt(q))
		}
	case "symlink":
		err = os.Symlink(o.Q, p)
	case "link":
		if err = os.Link(p, q); err == nil {
			return "ok" + sameIno(inoAt(p), inoAt(q))
		}
	case "chmod":
		before := inoAt(p)
		if err = os.Chmod(p, o.Mode); err == nil {
			return "ok" + sameIno(before, inoAt(p))
		}
	case "truncate":
		err = os.Truncate(p, o.Offset)
	case "readdir":
		var ents []os.DirEntry
		if ents, err = os.ReadDir(p); err == nil {
			s := "entries"
			for _, e := range ents {
				s += " " + e.Name() + ":" + e.Type().String()
			}
			return s
		}
	case "stat":
		var fi os.FileInfo
		if fi, err = os.Lstat(p); err == nil {
			return describe(fi)
		}
	case "open":
		if f != nil {
			f.Close()
			s.held[o.Slot] = nil
		}
		if f, err = os.OpenFile(p, o.Flag, 0o644); err == nil {
			s.held[o.Slot], s.readOnly[o.Slot] = f, o.Flag&(os.O_WRONLY|os.O_RDWR) == 0
		}
	case "hwrite":
		_, err = f.Write(o.Data)
	case "hread":
		b := make([]byte, 256)
		var n int
		if n, err = f.ReadAt(b, 0); (err == nil || errors.Is(err, io.EOF)) && frozen {
			return "read, not compared"
		} else if err == nil || errors.Is(err, io.EOF) {
			return "read " + strconv.Quote(string(b[:n]))
		}
	case "hstat":
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil && frozen {
			return regexp.MustCompile(` \d+ bytes`).ReplaceAllString(describe(fi), "")
		} else if err == nil {
			return describe(fi)
		}
	case "htruncate":
		err = f.Truncate(o.Offset)
	case "hclose":
		if f != nil {
			err = f.Close()
			s.held[o.Slot] = nil
		}
	}
	return errnoName(err)
}

// describe is what both sides must agree on about fi: a directory's
// size and link count are the file system's own.
func describe(fi os.FileInfo) string {
	if fi.IsDir() {
		return fmt.Sprintf("stat %s", fi.Mode())
	}
	return fmt.Sprintf("stat %s %d bytes %d links", fi.Mode(), fi.Size(), fi.Sys().(*syscall.Stat_t).Nlink)
}

// inoAt is the inode number of what p names; 0 when nothing.
func inoAt(p string) uint64 {
	var st syscall.Stat_t
	if syscall.Lstat(p, &st) != nil {
		return 0
	}
	return st.Ino
}

// sameIno describes whether an object kept its inode number.
func sameIno(before, after uint64) string {
	switch {
	case before == 0:
		return ""
	case before == after:
		return ", same inode number"
	}
	return ", inode number changed"
}

func errnoName(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return "errno " + errno.Error()
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return "error " + pe.Op + ": " + pe.Err.Error()
	}
	return "error " + err.Error()
}

// ctimeTick is longer than a tick of the clock the kernel stamps files
// with (finer only for a file whose ctime was read since its change).
const ctimeTick = 20 * time.Millisecond

// ctimesAround notes, before op, the ctime of the object it changes on
// both sides, and returns a check to run after: the ctime must have
// moved on both sides or on neither (values differ: the objects were
// made at other times), when op succeeded. Objects changed within a
// clock tick before are not compared: a movement is only told from none
// across a tick. A chmod to the mode a file has moves it too.
func ctimesAround(op vfstest.Op, sides ...*side) func() string {
	before, after := op.P, op.P
	switch op.Kind {
	case "chmod", "truncate", "link":
	case "rename":
		after = op.Q
	default:
		return func() string { return "" }
	}
	ctime := func(s *side, p string) (time.Time, bool) {
		var st syscall.Stat_t
		if syscall.Lstat(filepath.Join(s.root, p), &st) != nil {
			return time.Time{}, false
		}
		return time.Unix(st.Ctim.Unix()), true
	}
	was := make([]time.Time, len(sides))
	for i, s := range sides {
		t, ok := ctime(s, before)
		if !ok || time.Since(t) < ctimeTick {
			return func() string { return "" }
		}
		was[i] = t
	}
	return func() string {
		var moved []bool
		for i, s := range sides {
			t, ok := ctime(s, after)
			if !ok {
				return ""
			}
			moved = append(moved, t.After(was[i]))
		}
		if moved[0] != moved[1] {
			return fmt.Sprintf("ctime of %s moved in the mount %v, in the plain directory %v", op.P, moved[0], moved[1])
		}
		return ""
	}
}
