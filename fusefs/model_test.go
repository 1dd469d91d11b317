package fusefs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// TestDifferential applies the same random operations to the mount and
// to a plain directory that started with the same files: every result
// (the errno, what a read returns) and the final trees must agree. Set
// DRAFTFS_SEED to replay a seed.
func TestDifferential(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
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

func differential(t *testing.T, seed uint64, steps int) {
	initial := map[string]string{"a": "alpha\n", "d/a": "delta a\n", "d/e/a": "deep\n", "e/": ""}
	m := testMount(t, mountOptions{files: initial})
	plain := t.TempDir()
	writeTree(t, plain, initial)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := range steps {
		op := randomOp(rng)
		got := op.apply(m.mnt)
		want := op.apply(plain)
		if got != want {
			t.Fatalf("seed %d step %d: %s: mount %s, plain directory %s (replay with DRAFTFS_SEED=%d)", seed, i, op, got, want, seed)
		}
	}
	if diff := diffSnapshots(snapshot(t, plain), snapshot(t, m.mnt)); len(diff) > 0 {
		t.Fatalf("seed %d: final trees differ: %v", seed, diff)
	}
}

// fsOp is one random operation.
type fsOp struct {
	kind   string
	p, q   string
	data   string
	mode   os.FileMode
	offset int64
}

func (o fsOp) String() string {
	return fmt.Sprintf("%s(%q, %q, %q, %o, %d)", o.kind, o.p, o.q, o.data, o.mode, o.offset)
}

func randomOp(rng *rand.Rand) fsOp {
	pick := func() string { return names[rng.IntN(len(names))] }
	kinds := []string{"write", "write", "append", "read", "read", "mkdir", "rmdir", "remove", "rename", "rename", "symlink", "link", "chmod", "truncate", "readdir", "stat"}
	o := fsOp{kind: kinds[rng.IntN(len(kinds))], p: pick(), q: pick()}
	o.data = fmt.Sprintf("%x\n", rng.Uint32())
	o.mode = []os.FileMode{0o600, 0o644, 0o755, 0o700}[rng.IntN(4)]
	o.offset = int64(rng.IntN(12))
	return o
}

// apply runs the operation below root and describes its outcome.
func (o fsOp) apply(root string) string {
	p, q := filepath.Join(root, o.p), filepath.Join(root, o.q)
	var err error
	switch o.kind {
	case "write":
		err = os.WriteFile(p, []byte(o.data), 0o644)
	case "append":
		var f *os.File
		if f, err = os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			_, err = f.WriteString(o.data)
			f.Close()
		}
	case "read":
		var b []byte
		if b, err = os.ReadFile(p); err == nil {
			return "read " + strconv.Quote(string(b))
		}
	case "mkdir":
		err = os.Mkdir(p, o.mode|0o700)
	case "rmdir":
		err = syscall.Rmdir(p)
	case "remove":
		err = syscall.Unlink(p)
	case "rename":
		err = os.Rename(p, q)
	case "symlink":
		err = os.Symlink(o.q, p)
	case "link":
		err = os.Link(p, q)
	case "chmod":
		err = os.Chmod(p, o.mode)
	case "truncate":
		err = os.Truncate(p, o.offset)
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
			size := fi.Size()
			if fi.IsDir() {
				size = 0
			}
			return fmt.Sprintf("stat %s %d", fi.Mode(), size)
		}
	}
	return errnoName(err)
}

func errnoName(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return "errno " + errno.Error()
	}
	return "error " + err.Error()
}
