package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// tmpfsAt mounts a small tmpfs at dir for the test (root only).
func tmpfsAt(t *testing.T, dir string, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount the test's tmpfs %s: %v", dir, err)
		}
	})
}

// fill writes a file in dir until its disk is full.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// And the last few bytes.
	for {
		if _, err := f.Write(buf[:1]); err != nil {
			break
		}
	}
}

// TestFullStateDisk: with the state on a full disk and records in the
// log no checkpoint could take, every command that reads, discards or
// starts a daemon works; a write through the mount fails cleanly and
// nothing is lost.
func TestFullStateDisk(t *testing.T) {
	needFUSE(t)
	f := newFixture(t)
	tmpfsAt(t, f.state, "8m")
	f.file("a.txt", "one\n")
	mnt := filepath.Join(f.tmp, "view")
	d := f.serve(mnt)
	for i := range 30 {
		if err := os.WriteFile(filepath.Join(mnt, fmt.Sprintf("f%02d", i)), []byte(strings.Repeat("x", 1000)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(mnt, "a.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.kill()
	f.ok("unmount", mnt)
	fill(t, f.state)

	if r := f.ok("status"); !strings.Contains(r.out, "M a.txt") || !strings.Contains(r.out, "A f29") {
		t.Fatalf("status on a full state disk: %s", r)
	}
	if r := f.ok("diff", "a.txt"); !strings.Contains(r.out, "+two") {
		t.Fatalf("diff on a full state disk: %s", r)
	}
	f.ok("log")
	d = f.serve(mnt)
	if b, err := os.ReadFile(filepath.Join(mnt, "f07")); err != nil || len(b) != 1000 {
		t.Fatalf("read through the mount on a full state disk: %d bytes, %v", len(b), err)
	}
	err := os.WriteFile(filepath.Join(mnt, "big"), make([]byte, 1<<20), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write on a full state disk: %v, want ENOSPC", err)
	}
	if r := f.ok("status"); !strings.Contains(r.out, "A f29") {
		t.Fatalf("status through the daemon on a full state disk: %s", r)
	}
	d.stop()
	if r := f.ok("discard", "f00", "f01"); !strings.Contains(r.out, "f00") {
		t.Fatalf("discard on a full state disk: %s", r)
	}
	if r := f.ok("status"); strings.Contains(r.out, "f00") || !strings.Contains(r.out, "A f29") || !strings.Contains(r.out, "M a.txt") {
		t.Fatalf("status after the discard: %s", r)
	}
	f.ok("discard", "--all")
	if r := f.ok("status"); r.out != "" {
		t.Fatalf("status after discard --all: %s", r)
	}
}

// TestGCCommand: draftfs gc --dry-run reports the state's size and what
// it would drop without dropping it; draftfs gc drops it.
func TestGCCommand(t *testing.T) {
	f := newFixture(t)
	f.file("a.txt", "one\n")
	mnt := filepath.Join(f.tmp, "view")
	d := f.serve(mnt)
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(mnt, "a.txt"), []byte(fmt.Sprintf("v%d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		f.ok("commit")
	}
	r := f.ok("gc", "--dry-run", "--json")
	if !strings.Contains(r.out, `"dryRun": true`) || !strings.Contains(r.out, `"size": `) || !strings.Contains(r.out, `"undo": `) {
		t.Fatalf("gc --dry-run --json: %s", r)
	}
	if r := f.ok("gc"); !strings.Contains(r.out, "draft main: state ") || !strings.Contains(r.out, "freed") {
		t.Fatalf("gc: %s", r)
	}
	d.stop()
	if r := f.ok("gc", "--dry-run"); !strings.Contains(r.out, "would free 0 bytes") {
		t.Fatalf("gc --dry-run without a daemon: %s", r)
	}
}
