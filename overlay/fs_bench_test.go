//go:build linux

package overlay_test

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/overlay"
)

// The merged view against the OS file system through afero.NewOsFs, on
// what the draft has not touched: the cost of looking at the draft
// first. Run with: go test ./overlay -run '^$' -bench 'View' -benchmem

// benchPair gives the same path through the view and through OsFs.
type benchPair struct {
	name string
	fsys afero.Fs
	path func(key string) string
}

func benchPairs(e *viewEnv) []benchPair {
	return []benchPair{
		{"view", e.v, func(key string) string { return key }},
		{"osfs", afero.NewOsFs(), e.disk},
	}
}

func BenchmarkViewRead(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20} {
		key := "src/pkg/file.bin"
		e := newViewEnv(b, map[string]string{key: strings.Repeat("x", size)})
		buf := make([]byte, 64<<10)
		for _, p := range benchPairs(e) {
			b.Run(fmt.Sprintf("%dKiB/%s", size>>10, p.name), func(b *testing.B) {
				name := p.path(key)
				b.SetBytes(int64(size))
				for b.Loop() {
					f, err := p.fsys.Open(name)
					if err != nil {
						b.Fatal(err)
					}
					n, err := readLoop(f, buf)
					if err != nil || n != size {
						b.Fatalf("read %d bytes: %v", n, err)
					}
					f.Close()
				}
			})
		}
	}
}

// readLoop reads f to its end in len(buf) pieces, as cat or a FUSE
// read of 64 KiB does.
func readLoop(f io.Reader, buf []byte) (int, error) {
	total := 0
	for {
		n, err := f.Read(buf)
		total += n
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func BenchmarkViewLstat(b *testing.B) {
	key := "src/pkg/file.go"
	e := newViewEnv(b, map[string]string{key: "package pkg\n"})
	mustWrite(b, e.v, "src/other.go", "a draft entry nearby") // the draft is not empty
	for _, p := range benchPairs(e) {
		b.Run(p.name, func(b *testing.B) {
			l := p.fsys.(afero.Lstater)
			name := p.path(key)
			for b.Loop() {
				if _, _, err := l.LstatIfPossible(name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkViewReadDir(b *testing.B) {
	tree := map[string]string{}
	for i := range 100 {
		tree[fmt.Sprintf("dir/file%03d.go", i)] = "x"
	}
	e := newViewEnv(b, tree)
	b.Run("view", func(b *testing.B) {
		for b.Loop() {
			ents, err := e.v.ReadDir("dir")
			if err != nil || len(ents) != 100 {
				b.Fatalf("%d entries: %v", len(ents), err)
			}
		}
	})
	b.Run("osfs", func(b *testing.B) {
		osfs := afero.NewOsFs()
		for b.Loop() {
			f, err := osfs.Open(e.disk("dir"))
			if err != nil {
				b.Fatal(err)
			}
			ents, err := f.(fs.ReadDirFile).ReadDir(-1) // names and types, as the view's
			f.Close()
			if err != nil || len(ents) != 100 {
				b.Fatalf("%d entries: %v", len(ents), err)
			}
			sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
		}
	})
}

// BenchmarkViewReadDirInfo lists a directory four levels down and
// describes every entry, as a mount answering READDIRPLUS does: with
// ReadDirPlus, and with ReadDir and each entry's Info.
func BenchmarkViewReadDirInfo(b *testing.B) {
	tree := map[string]string{}
	for i := range 100 {
		tree[fmt.Sprintf("src/pkg/sub/dir/file%03d.go", i)] = "x"
	}
	e := newViewEnv(b, tree)
	for name, list := range map[string]func(string) ([]fs.DirEntry, error){"plus": e.v.ReadDirPlus, "lazy": e.v.ReadDir} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				ents, err := list("src/pkg/sub/dir")
				if err != nil || len(ents) != 100 {
					b.Fatalf("%d entries: %v", len(ents), err)
				}
				for _, ent := range ents {
					if _, err := ent.Info(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkViewCopyUp1MiB measures the first write to an untouched
// 1 MiB file: recording its base (hash and kept copy) and copying it into
// the draft. The copy-up is discarded between iterations, untimed.
func BenchmarkViewCopyUp1MiB(b *testing.B) {
	e := newViewEnv(b, map[string]string{"big.bin": strings.Repeat("0123456789abcdef", 1<<16)})
	b.SetBytes(1 << 20)
	for b.Loop() {
		f, err := e.v.OpenFile("big.bin", os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("X"), 0); err != nil {
			b.Fatal(err)
		}
		f.Close()
		b.StopTimer()
		if _, err := e.d.Discard(nil, overlay.SourceCLI); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkViewEntryMemory reports the heap the draft's metadata takes
// per entry, with 10,000 new files in 100 directories.
func BenchmarkViewEntryMemory(b *testing.B) {
	const n = 10000
	for b.Loop() {
		b.StopTimer()
		e := newViewEnv(b, nil)
		for i := range n / 100 {
			if err := e.v.Mkdir(fmt.Sprintf("d%02d", i), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		before := liveHeap()
		b.StartTimer()
		for i := range n - n/100 {
			f, err := e.v.Create(filepath.Join(fmt.Sprintf("d%02d", i%(n/100)), fmt.Sprintf("file%05d.go", i)))
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		b.StopTimer()
		b.ReportMetric(float64(liveHeap()-before)/float64(n-n/100), "bytes/entry")
		runtime.KeepAlive(e)
		b.StartTimer()
	}
}

func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// BenchmarkCreateLikeTar makes one file per op with the engine calls
// the mount makes for a file tar extracts (fusefs: a LOOKUP that finds
// nothing, MKNOD of mode 0600 and the entry's attributes, a WRITE
// through a handle opened for it, then SETATTRs of owner, mode (0644:
// a change, as tar's is) and times, each preceded by the node's Lstat):
// the engine's share of the daemon's CPU per created file, without FUSE.
func BenchmarkCreateLikeTar(b *testing.B) {
	e := newViewEnv(b, map[string]string{"src/keep": "x"})
	data := []byte(strings.Repeat("x", 2000))
	uid, gid := os.Getuid(), os.Getgid()
	mode := fs.FileMode(0o644)
	i := 0
	for b.Loop() {
		key := fmt.Sprintf("src/f%06d.txt", i)
		i++
		if _, err := e.v.Lstat(key); err == nil {
			b.Fatalf("%s exists", key)
		}
		if err := e.v.Mknod(key, 0o600, 0); err != nil {
			b.Fatal(err)
		}
		if _, err := e.v.Lstat(key); err != nil {
			b.Fatal(err)
		}
		f, err := e.v.OpenFile(key, os.O_RDWR, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.WriteAt(data, 0); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		for _, a := range []overlay.Attrs{{Uid: &uid, Gid: &gid}, {Mode: &mode}, {Atime: &now, Mtime: &now}} {
			if _, err := e.v.Lstat(key); err != nil {
				b.Fatal(err)
			}
			if _, err := e.v.SetattrStat(key, a); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSetattrLikeTar runs each of the three SETATTRs tar sends for
// a file it made (its times, a chown to the owner it has, its mode) on
// a file of the draft, the last one changed, as tar's are: the engine's
// share of each, without FUSE.
func BenchmarkSetattrLikeTar(b *testing.B) {
	e := newViewEnv(b, map[string]string{"src/keep": "x"})
	uid, gid := os.Getuid(), os.Getgid()
	for _, c := range []struct {
		name  string
		attrs func(i int) overlay.Attrs
	}{
		{"times", func(int) overlay.Attrs { now := time.Now(); return overlay.Attrs{Atime: &now, Mtime: &now} }},
		{"chown-same", func(int) overlay.Attrs { return overlay.Attrs{Uid: &uid, Gid: &gid} }},
		{"chmod", func(i int) overlay.Attrs { mode := fs.FileMode(0o644 - i%2*0o4); return overlay.Attrs{Mode: &mode} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			key := "src/" + c.name
			must(b, afero.WriteFile(e.v, key, []byte("hello"), 0o600))
			i := 0
			for b.Loop() {
				if _, err := e.v.SetattrStat(key, c.attrs(i)); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkRemoveLikeRmRf removes one file per op with the engine calls
// the mount makes for a file rm -rf deletes (fusefs: UNLINK, which
// looks at the file's links and holds it in case a process has it open,
// then the directory's attributes, and the FORGET that lets go of the
// hold), files made in the draft in a directory it made, as an agent's
// untar then rm -rf: the engine's share of the daemon's CPU per deleted
// file, without FUSE.
func BenchmarkRemoveLikeRmRf(b *testing.B) {
	e := newViewEnv(b, map[string]string{"src/keep": "x"})
	data := []byte(strings.Repeat("x", 2000))
	n := b.N
	for i := range n {
		if i%1000 == 0 {
			must(b, e.v.MkdirAll(fmt.Sprintf("new/d%03d", i/1000), 0o755))
		}
		must(b, afero.WriteFile(e.v, fmt.Sprintf("new/d%03d/f%06d.txt", i/1000, i), data, 0o644))
	}
	b.ResetTimer()
	for i := range n {
		dir := fmt.Sprintf("new/d%03d", i/1000)
		key := fmt.Sprintf("%s/f%06d.txt", dir, i)
		if _, err := e.v.LstatMeta(key); err != nil {
			b.Fatal(err)
		}
		h, err := e.v.Hold(key)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.v.Remove(key); err != nil {
			b.Fatal(err)
		}
		if _, err := e.v.Lstat(dir); err != nil {
			b.Fatal(err)
		}
		if err := h.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
