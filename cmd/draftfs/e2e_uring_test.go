package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/draftfs/draftfs/fusefs"
)

// holdIOURing turns the kernel's FUSE-over-io_uring switch on for the
// test (and puts it back after), skipping where it cannot.
func holdIOURing(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("turning FUSE over io_uring on needs root")
	}
	release, err := fusefs.HoldIOURing()
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(release)
}

// servedOverRing is the daemon's log line of a mount on the ring.
const servedOverRing = "over io_uring"

// TestIOURing: the mounts of serve and run are served over io_uring by
// default where the kernel offers it, for root and for an ordinary
// user (the ring needs the mount's /dev/fuse descriptor, which
// fusermount3 passes back to the user's daemon: _FUSE_COMMFD), and
// --io-uring=false keeps them on /dev/fuse. Changes made through the
// mount reach the draft either way.
func TestIOURing(t *testing.T) {
	needFUSE(t)
	holdIOURing(t)
	whoever(t, func(t *testing.T, f *fixture) {
		f.file("a.txt", "one\n")
		mnt := filepath.Join(f.tmp, "view")
		if err := os.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		f.own(mnt)
		d := f.serve(mnt)
		sh := f.as(exec.Command("sh", "-c", `cat a.txt && echo two > b.txt && mv b.txt c.txt && ls`))
		sh.Dir = mnt
		if r := f.finish(sh, ""); r.code != 0 || r.out != "one\na.txt\nc.txt\n" {
			t.Errorf("through the mount: %s", r)
		}
		d.stop()
		if log := d.stderr.String(); !strings.Contains(log, servedOverRing) {
			t.Errorf("serve: the mount was not served over io_uring; log:\n%s", log)
		}
		r := f.run("run", "--", "sh", "-c", `cat c.txt && echo three > d.txt`)
		if r.code != 0 || r.out != "two\n" {
			t.Errorf("run: %s", r)
		}
		if !strings.Contains(r.err, servedOverRing) {
			t.Errorf("run: the mount was not served over io_uring; stderr:\n%s", r.err)
		}
		r = f.run("--io-uring=false", "run", "--", "sh", "-c", `echo four > e.txt`)
		if r.code != 0 || strings.Contains(r.err, servedOverRing) {
			t.Errorf("run --io-uring=false: %s", r)
		}
		if r := f.ok("status"); !strings.Contains(r.out, "c.txt") || !strings.Contains(r.out, "d.txt") || !strings.Contains(r.out, "e.txt") {
			t.Errorf("status after the changes: %s", r)
		}
	})
}
