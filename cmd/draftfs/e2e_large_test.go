package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// largeDraft is how many files TestLargeDraft changes.
const largeDraft = 10000

// TestLargeDraft: a draft of 10,000 new files lists, commits with
// progress and undoes. Times are logged.
func TestLargeDraft(t *testing.T) {
	f := newFixture(t)
	for i := 0; i < 100; i++ {
		if err := os.Mkdir(filepath.Join(f.ws, fmt.Sprintf("d%02d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d := f.serve("")
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		agent := f.agent()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < largeDraft; i += 4 {
				if err := agent.WriteFile(fmt.Sprintf("d%02d/f%05d.txt", i%100, i), []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d writes over the socket (4 clients): %v", largeDraft, time.Since(start))

	start = time.Now()
	r := f.ok("status")
	if n := strings.Count(r.out, "\n"); n != largeDraft || !strings.HasPrefix(r.out, "A d00/f00000.txt\n") {
		t.Fatalf("status lists %d lines, want %d: %.200s", n, largeDraft, r.out)
	}
	t.Logf("status of %d changes through the daemon: %v", largeDraft, time.Since(start))

	start = time.Now()
	r = f.ok("commit")
	t.Logf("commit of %d new files through the daemon: %v", largeDraft, time.Since(start))
	m := regexp.MustCompile(`draftfs commit: (\d+)/(\d+)\n$`).FindStringSubmatch(r.err)
	if m == nil || m[1] != m[2] {
		t.Fatalf("commit showed no final progress: %.300s", r.err)
	}
	if total, _ := strconv.Atoi(m[2]); total < largeDraft {
		t.Fatalf("progress total %d", total)
	}
	if !strings.Contains(r.out, "committed "+thousands(largeDraft)+" changes") {
		t.Fatalf("commit: %.300s", r.out[max(0, len(r.out)-300):])
	}
	if got := f.disk("d42/f09942.txt"); got != "file 9942\n" {
		t.Fatalf("disk after commit: %q", got)
	}

	d.stop()
	start = time.Now()
	f.ok("undo")
	t.Logf("undo of %d files without a daemon: %v", largeDraft, time.Since(start))
	start = time.Now()
	r = f.ok("status", "--json")
	t.Logf("status --json of %d changes without a daemon: %v", largeDraft, time.Since(start))
	if n := strings.Count(r.out, `"change": "added"`); n != largeDraft {
		t.Fatalf("status --json after undo: %d added", n)
	}
}

// TestLargeFile: a 100 MiB text file changed through the mount shows
// in status and diff and commits. Times are logged.
func TestLargeFile(t *testing.T) {
	f := newFixture(t)
	big := filepath.Join(f.ws, "big.txt")
	out, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(out, 1<<20)
	for i := 0; i < (100<<20)/16; i++ {
		fmt.Fprintf(w, "line %010d\n", i) // 16 bytes
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	out.Close()
	mnt := filepath.Join(f.tmp, "view")
	f.serve(mnt)

	start := time.Now()
	a, err := os.OpenFile(filepath.Join(mnt, "big.txt"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteString("agent line\n"); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("append to a 100 MiB file through the mount (copy-up): %v", time.Since(start))

	start = time.Now()
	if r := f.ok("status"); r.out != "M big.txt\n" {
		t.Fatalf("status: %s", r)
	}
	t.Logf("status: %v", time.Since(start))
	start = time.Now()
	if r := f.ok("diff", "--stat"); !strings.Contains(r.out, " big.txt | 1 +\n") {
		t.Fatalf("diff --stat: %s", r)
	}
	t.Logf("diff --stat: %v", time.Since(start))
	start = time.Now()
	if r := f.ok("diff"); !strings.HasSuffix(r.out, " line 0006553599\n+agent line\n") || len(r.out) > 1000 {
		t.Fatalf("diff: %.500s", r.out)
	}
	t.Logf("diff: %v", time.Since(start))
	start = time.Now()
	f.ok("commit")
	t.Logf("commit: %v", time.Since(start))
	fi, err := os.Stat(big)
	if err != nil || fi.Size() != 100<<20+int64(len("agent line\n")) {
		t.Fatalf("disk after commit: %v %v", fi, err)
	}
}

// TestBinaryLargeFile: a 100 MiB binary file diffs as binary, and the
// diff says so instead of printing bytes.
func TestBinaryLargeFile(t *testing.T) {
	f := newFixture(t)
	data := make([]byte, 100<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(filepath.Join(f.ws, "blob"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(f.tmp, "view")
	f.serve(mnt)
	data[len(data)/2] ^= 0xff
	start := time.Now()
	if err := os.WriteFile(filepath.Join(mnt, "blob"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("write of 100 MiB through the mount: %v", time.Since(start))
	start = time.Now()
	r := f.ok("diff")
	if r.out != "diff --git a/blob b/blob\nBinary files a/blob and b/blob differ\n" {
		t.Fatalf("diff of a binary file: %.300q", r.out)
	}
	t.Logf("diff of 100 MiB binary: %v", time.Since(start))
}
