package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun: draftfs run shows the merged view at the workspace's own path
// and sends writes to the draft, with or without a daemon, and exits
// with the command's status.
func TestRun(t *testing.T) {
	needFUSE(t)
	f := newFixture(t)
	f.file("a.txt", "disk\n")

	// Without a daemon: one runs in the command's process.
	r := f.runIn("", "run", "--", "sh", "-c", `cat a.txt; echo new > new.txt; echo abs > "$PWD/abs.txt"; rm a.txt; exit 3`)
	if r.code != 3 || r.out != "disk\n" {
		t.Fatalf("run: %s", r)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "new.txt")); err == nil {
		t.Fatal("a write inside draftfs run reached the disk")
	}
	if r := f.ok("status"); r.out != "D a.txt\nA abs.txt\nA new.txt\n" {
		t.Fatalf("status after run: %s", r)
	}
	if r := f.run("run", "--", "no-such-command-draftfs"); r.code != 127 || !strings.Contains(r.err, "not found") {
		t.Fatalf("run of a missing command: %s", r)
	}
	if r := f.run("run", "false"); r.code != 1 {
		t.Fatalf("run false: %s", r)
	}

	// With a daemon without a mount: it mounts for run.
	d := f.serve("")
	if r := f.ok("run", "sh", "-c", "cat new.txt; ls"); r.out != "new\nabs.txt\nnew.txt\n" {
		t.Fatalf("run through the daemon: %s", r)
	}
	if r := f.ok("run", "--", "sh", "-c", "echo more >> new.txt"); r.code != 0 {
		t.Fatalf("run: %s", r)
	}
	if got := f.ok("status", "new.txt").out; got != "A new.txt\n" {
		t.Fatalf("status: %q", got)
	}
	if r := f.ok("diff", "new.txt"); !strings.Contains(r.out, "+new\n+more\n") {
		t.Fatalf("diff after two runs: %s", r)
	}
	d.stop()
	if m := mountsBelow(f.tmp); len(m) > 0 {
		t.Fatalf("mounts left after the daemon stopped: %v", m)
	}
}

// mountsBelow lists the mount points below dir.
func mountsBelow(dir string) []string {
	data, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	}
	return out
}
