package uring

import (
	"cmp"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// BenchmarkTransport serves the same toy file system four ways, side
// by side: "dev" (a minimal read/write loop on /dev/fuse, two reader
// threads), "ring" (FUSE over io_uring, one queue per CPU), "gofuse"
// (go-fuse's own server with a RawFileSystem giving the same answers:
// how draftfs serves today) and "gofuse-ring" (that RawFileSystem
// served over the ring by RawHandler, go-fuse's Server doing INIT and
// forgets: how draftfs would serve over io_uring). Workloads: "stat" (one LOOKUP and one GETATTR each, all
// timeouts zero) and "write4k" (open, a 4 KiB pwrite, close).
//
// Metrics beside ns/op: req/op (requests the server answered), srv-us/req
// (CPU of every thread but the client's, per request: the daemon's cost
// including its syscalls) and cpu-us/op (the whole process, client and
// kernel work on its behalf included). CPU times hold better than wall
// clock on a loaded machine. -count repeats each variant in a row, so
// for variants interleaved run the command several times instead:
//
//	for i in 1 2 3 4 5; do go test -run - -bench Transport ./fusefs/internal/uring; done
//
// It skips without root or when the kernel lacks FUSE over io_uring.
func BenchmarkTransport(b *testing.B) {
	workloads := []struct {
		name string
		op   func(path string, buf []byte) error
	}{
		{"stat", func(path string, _ []byte) error {
			var st unix.Stat_t
			return unix.Stat(path, &st)
		}},
		{"write4k", func(path string, buf []byte) error {
			fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			if _, err := unix.Pwrite(fd, buf, 0); err != nil {
				unix.Close(fd)
				return err
			}
			return unix.Close(fd)
		}},
	}
	for _, wl := range workloads {
		for _, mode := range []string{"dev", "ring", "gofuse", "gofuse-dev", "gofuse-ring"} {
			b.Run(wl.name+"/"+mode, func(b *testing.B) {
				fs := &toyFS{ring: mode == "ring"}
				var mnt string
				switch mode {
				case "gofuse", "gofuse-dev", "gofuse-ring":
					raw := &toyRaw{RawFileSystem: fuse.NewDefaultRawFileSystem(), t: fs}
					transport := cmp.Or(strings.TrimPrefix(mode, "gofuse-"), "gofuse")
					mnt, _ = goFuseMount(b, raw, fuse.MountOptions{MaxWrite: toyMaxWrite}, transport)
				default:
					mnt = toyMount(b, fs, 2)
				}
				path := filepath.Join(mnt, "file")
				buf := make([]byte, 4096)
				// The client loop runs on a thread of its own, so the
				// rest of the process's CPU is the server's.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var self0, thread0 unix.Rusage
				unix.Getrusage(unix.RUSAGE_SELF, &self0)
				unix.Getrusage(unix.RUSAGE_THREAD, &thread0)
				req0 := fs.requests.Load()
				start := time.Now()
				n := 0
				for b.Loop() {
					if err := wl.op(path, buf); err != nil {
						b.Fatal(err)
					}
					n++
				}
				elapsed := time.Since(start)
				var self1, thread1 unix.Rusage
				unix.Getrusage(unix.RUSAGE_THREAD, &thread1)
				unix.Getrusage(unix.RUSAGE_SELF, &self1)
				reqs := float64(fs.requests.Load() - req0)
				self, client := cpu(self1)-cpu(self0), cpu(thread1)-cpu(thread0)
				b.ReportMetric(reqs/float64(n), "req/op")
				b.ReportMetric(reqs/elapsed.Seconds()/1000, "kreq/s")
				b.ReportMetric((self-client).Seconds()*1e6/reqs, "srv-us/req")
				b.ReportMetric(self.Seconds()*1e6/float64(n), "cpu-us/op")
			})
		}
	}
}

func cpu(r unix.Rusage) time.Duration {
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// toyRaw gives go-fuse's server the toy's answers.
type toyRaw struct {
	fuse.RawFileSystem
	t *toyFS
}

func (r *toyRaw) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	r.t.requests.Add(1)
	if h.NodeId != fuse.FUSE_ROOT_ID || name != "file" {
		return fuse.ENOENT
	}
	*out = fuse.EntryOut{NodeId: toyFileIno, Attr: r.t.attr(toyFileIno)}
	return fuse.OK
}

func (r *toyRaw) GetAttr(_ <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	r.t.requests.Add(1)
	*out = fuse.AttrOut{Attr: r.t.attr(in.NodeId)}
	return fuse.OK
}

func (r *toyRaw) Open(_ <-chan struct{}, _ *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	r.t.requests.Add(1)
	out.Fh = 1
	return fuse.OK
}

func (r *toyRaw) Write(_ <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	r.t.requests.Add(1)
	r.t.written.Add(int64(len(data)))
	return uint32(len(data)), fuse.OK
}

func (r *toyRaw) Flush(_ <-chan struct{}, _ *fuse.FlushIn) fuse.Status {
	r.t.requests.Add(1)
	return fuse.OK
}

func (r *toyRaw) Release(_ <-chan struct{}, _ *fuse.ReleaseIn) { r.t.requests.Add(1) }
