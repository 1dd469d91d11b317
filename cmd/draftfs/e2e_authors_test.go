package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/draftfs/draftfs/daemon"
)

// opsBy maps each path the log's ops name to who made them ("by"), and
// fails when two ops of one path name different authors.
func (f *fixture) opsBy() map[string]string {
	f.t.Helper()
	by := map[string]string{}
	for _, st := range f.timeline() {
		for _, op := range st.Ops {
			if op.Path == "" {
				continue
			}
			if old, ok := by[op.Path]; ok && old != op.By {
				f.t.Errorf("%s: ops by %q and by %q", op.Path, old, op.By)
			}
			by[op.Path] = op.By
		}
	}
	return by
}

// TestAuthorsPerProcess: each change made through the mount is by the
// process that made it: for the processes of a draftfs run, by the
// command the run started (two runs at once on one draft, each its
// own), for any other process by its own command line.
func TestAuthorsPerProcess(t *testing.T) {
	needFUSE(t)
	f := newFixture(t)
	f.file("keep.txt", "disk\n")
	mnt := filepath.Join(f.tmp, "mnt")
	f.serve(mnt)

	// Two runs at once: each waits for the other's file, so both run
	// while the other writes. A's processes: sh, then the shell's
	// children (mkdir, mv) under it.
	wait := func(p string) string {
		return "i=0; while [ ! -e " + p + " ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; "
	}
	runA := []string{"sh", "-c", "echo a > a.txt; mkdir dir; echo x > dir/x.txt; " + wait("b.txt") + "echo more >> keep.txt"}
	runB := []string{"sh", "-c", wait("a.txt") + "echo b > b.txt; cp b.txt b2.txt"}
	a, b := f.cmd(append([]string{"run", "--"}, runA...)...), f.cmd(append([]string{"run", "--"}, runB...)...)
	outA, outB := &strings.Builder{}, &strings.Builder{}
	a.Stdout, a.Stderr, b.Stdout, b.Stderr = outA, outA, outB, outB
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	if err := a.Wait(); err != nil {
		t.Fatalf("run A: %v: %s", err, outA)
	}
	if err := b.Wait(); err != nil {
		t.Fatalf("run B: %v: %s", err, outB)
	}

	// Two commands through the mount, outside any run.
	tee := f.as(exec.Command("tee", filepath.Join(mnt, "tee.txt")))
	tee.Stdin = strings.NewReader("tee\n")
	if out, err := tee.CombinedOutput(); err != nil {
		t.Fatalf("tee: %v: %s", err, out)
	}
	sh := f.as(exec.Command("sh", "-c", "echo sh > "+filepath.Join(mnt, "sh.txt")))
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("sh: %v: %s", err, out)
	}

	want := map[string]string{
		"a.txt":     daemon.CommandLine(runA),
		"dir":       daemon.CommandLine(runA),
		"dir/x.txt": daemon.CommandLine(runA),
		"keep.txt":  daemon.CommandLine(runA),
		"b.txt":     daemon.CommandLine(runB),
		"b2.txt":    daemon.CommandLine(runB),
		"tee.txt":   daemon.CommandLine(tee.Args),
		"sh.txt":    daemon.CommandLine(sh.Args),
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := f.opsBy()
		bad := ""
		for p, w := range want {
			if got[p] != w {
				bad += "\n  " + p + ": by " + got[p] + ", want by " + w
			}
		}
		if bad == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("log --json authors:%s\nlog:\n%s", bad, f.ok("log").out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// diff --annotate names them too, hunk by hunk.
	annotated := f.annotations()
	for p, w := range want {
		if p == "dir" {
			continue // a directory made: no hunk
		}
		if got := annotated[p]; !strings.HasSuffix(got, " mount "+w) {
			t.Errorf("diff --annotate --json: %s last written by %q, want by mount %s", p, got, w)
		}
	}
	// The plain log shows them too.
	if out := f.ok("log").out; !strings.Contains(out, "tee.txt  by tee ") || !strings.Contains(out, "b.txt  by "+daemon.CommandLine(runB)) {
		t.Errorf("draftfs log does not say who wrote tee.txt and b.txt:\n%s", out)
	}
}
