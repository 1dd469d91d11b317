//go:build linux

package fusefs

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/draftfs/draftfs/overlay"
)

// BenchmarkPushToReadable measures the time from an editor buffer push
// returning to its text being read whole through the mount (an open, a
// read and a close, each through FUSE), and reports the 50th and 99th
// percentiles.
func BenchmarkPushToReadable(b *testing.B) {
	m := testMount(b, mountOptions{files: map[string]string{"src/main.go": "package main\n"}})
	p := filepath.Join(m.mnt, "src/main.go")
	bufs := m.ws.Buffers()
	if err := bufs.Open("src/main.go", 1, []byte("package main\n")); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	buf := make([]byte, 64<<10)
	b.ResetTimer()
	for i := range b.N {
		text := fmt.Appendf(nil, "package main\n\n// edit %d\nfunc f%d() {}\n", i, i)
		if _, err := bufs.Replace("src/main.go", int64(i+2), text); err != nil {
			b.Fatal(err)
		}
		// The control socket answers a push once the mounts applied it:
		// that wait counts.
		start := time.Now()
		if !m.ws.Settle(5 * time.Second) {
			b.Fatal("the mount did not apply the push")
		}
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := f.Read(buf)
		f.Close()
		lat = append(lat, time.Since(start))
		if string(buf[:n]) != string(text) {
			b.Fatalf("push %d: read %q", i, buf[:n])
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkUntar extracts 1,000 small files into the mount per
// iteration, in a new directory each time: what creating files costs.
func BenchmarkUntar(b *testing.B) {
	m := testMount(b, mountOptions{})
	src := b.TempDir()
	for i := range 1000 {
		d := filepath.Join(src, "small", fmt.Sprintf("d%02d", i/100))
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%03d.txt", i)), fmt.Appendf(nil, "file %d\n", i), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	tarball := filepath.Join(src, "small.tar")
	shell(b, src, "tar cf small.tar small")
	b.ResetTimer()
	for i := range b.N {
		dir := filepath.Join(m.mnt, fmt.Sprintf("x%d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		shell(b, dir, "tar xf "+tarball)
	}
}

// BenchmarkDiskToVisible measures the time from a change on disk
// returning to the mount showing it: the window in which a read through
// the mount can still return the old content, while file watching
// brings the change and the kernel's caches are dropped. "rename"
// replaces the file by a rename (as git checkout does), "inplace"
// rewrites it (as an editor saving in place). It reports the 50th and
// 99th percentiles, how often the first read right after the change was
// stale, and, to tell the parts of the window apart, the percentiles of
// the time until the change reached the workspace's change feed (inotify
// and the watcher: the part draftfs can only wait for).
func BenchmarkDiskToVisible(b *testing.B) {
	for _, how := range []string{"rename", "inplace"} {
		b.Run(how, func(b *testing.B) { benchDiskToVisible(b, how == "rename") })
	}
}

func benchDiskToVisible(b *testing.B, rename bool) {
	m := testMount(b, mountOptions{files: map[string]string{"src/a.txt": "v0\n"}, watch: true})
	disk := filepath.Join(m.root, "src/a.txt")
	p := filepath.Join(m.mnt, "src/a.txt")
	if _, err := os.ReadFile(p); err != nil { // cached by the kernel from here on
		b.Fatal(err)
	}
	// The last time the feed brought a disk change of the file.
	var fed atomic.Int64
	sub := m.ws.Subscribe()
	defer sub.Close()
	go func() {
		for c := range sub.C {
			if c.Kind == overlay.ChangeDisk && c.Path == "src/a.txt" {
				fed.Store(time.Now().UnixNano())
			}
		}
	}()
	lat := make([]time.Duration, 0, b.N)
	feedLat := make([]time.Duration, 0, b.N)
	stale := 0
	b.ResetTimer()
	for i := range b.N {
		want := fmt.Sprintf("v%d\n", i+1)
		var err error
		fed.Store(0)
		if rename {
			tmp := disk + ".tmp"
			if err = os.WriteFile(tmp, []byte(want), 0o644); err == nil {
				err = os.Rename(tmp, disk)
			}
		} else {
			err = os.WriteFile(disk, []byte(want), 0o644)
		}
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for first := true; ; first = false {
			got, err := os.ReadFile(p)
			if err == nil && string(got) == want {
				break
			}
			if first {
				stale++
			}
			if time.Since(start) > 5*time.Second {
				b.Fatalf("change %d not visible through the mount after 5 s: %q %v", i, got, err)
			}
		}
		lat = append(lat, time.Since(start))
		// The event may come after the new content showed (a read that
		// missed the cache): wait for it, for the figure.
		for fed.Load() == 0 && time.Since(start) < time.Second {
			time.Sleep(50 * time.Microsecond)
		}
		if t := fed.Load(); t != 0 {
			feedLat = append(feedLat, max(0, time.Unix(0, t).Sub(start)))
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	slices.Sort(feedLat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(100*float64(stale)/float64(b.N), "stale-%")
	if len(feedLat) > 0 {
		b.ReportMetric(float64(feedLat[len(feedLat)/2].Microseconds()), "feed-p50-µs")
		b.ReportMetric(float64(feedLat[len(feedLat)*99/100].Microseconds()), "feed-p99-µs")
	}
}

// BenchmarkCheckoutToVisible replaces 200 files on disk by renames at
// once, as a git checkout does, then reads each through the mount: how
// many of those first reads still return the old content, and the time
// until every file reads new.
func BenchmarkCheckoutToVisible(b *testing.B) {
	const n = 200
	files := map[string]string{}
	for j := range n {
		files[fmt.Sprintf("src/f%03d.txt", j)] = "v0\n"
	}
	m := testMount(b, mountOptions{files: files, watch: true})
	for name := range files {
		if _, err := os.ReadFile(filepath.Join(m.mnt, name)); err != nil { // cached from here on
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	stale := 0
	b.ResetTimer()
	for i := range b.N {
		want := fmt.Sprintf("v%d\n", i+1)
		for name := range files {
			tmp := filepath.Join(m.root, name+".tmp")
			if err := os.WriteFile(tmp, []byte(want), 0o644); err != nil {
				b.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(m.root, name)); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		left := maps.Clone(files)
		for first := true; len(left) > 0; first = false {
			for name := range left {
				if got, err := os.ReadFile(filepath.Join(m.mnt, name)); err == nil && string(got) == want {
					delete(left, name)
				} else if first {
					stale++
				}
			}
			if time.Since(start) > 10*time.Second {
				b.Fatalf("change %d: %d files not visible through the mount after 10 s", i, len(left))
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "all-p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "all-p99-µs")
	b.ReportMetric(100*float64(stale)/float64(b.N*n), "stale-%")
}

// BenchmarkRemoveTree deletes 1,000 files the draft created (in 10
// directories) with rm -rf per iteration: what deleting files costs.
func BenchmarkRemoveTree(b *testing.B) {
	m := testMount(b, mountOptions{})
	for i := range b.N {
		b.StopTimer()
		dir := filepath.Join(m.mnt, fmt.Sprintf("x%d", i))
		for j := range 1000 {
			d := filepath.Join(dir, fmt.Sprintf("d%02d", j/100))
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%03d.txt", j)), []byte("x\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		shell(b, m.mnt, "rm -rf "+dir)
	}
}

// BenchmarkRsync copies 1,000 files (in 10 directories, 0.5-4 KiB each)
// into a new directory of the mount with rsync -a, then deletes it with
// rm -rf, per iteration: rsync's temporary file, write, utimes, chmod and
// rename per file, as the bench's rsync line does it.
func BenchmarkRsync(b *testing.B) {
	if _, err := exec.LookPath("rsync"); err != nil {
		b.Skip("rsync is not installed")
	}
	m := testMount(b, mountOptions{})
	src := b.TempDir()
	for i := range 1000 {
		d := filepath.Join(src, fmt.Sprintf("d%02d", i/100))
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		data := bytes.Repeat([]byte{byte('a' + i%26)}, 512+(i*37)%3584)
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%03d.txt", i)), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		dir := filepath.Join(m.mnt, fmt.Sprintf("x%d", i))
		shell(b, m.mnt, "rsync -a "+src+"/ "+dir+"/ && rm -rf "+dir)
	}
}
