//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMCPWriteMemory: an MCP write_file through the daemon holds a small
// multiple of its text in memory (a 9 MB write once kept 239 MB
// resident), and a write over what one write carries is refused with a
// message naming the write limit, not the read limit (issue 13, item 7).
func TestMCPWriteMemory(t *testing.T) {
	f := newFixture(t)
	f.serve("")
	c := f.cmd("mcp")
	if raceEnabled {
		// The race detector's shadow memory multiplies every heap byte
		// several times over: measure what users run.
		plain := filepath.Join(t.TempDir(), "draftfs")
		if out, err := exec.Command("go", "build", "-o", plain, ".").CombinedOutput(); err != nil {
			t.Fatalf("build draftfs without -race: %v\n%s", err, out)
		}
		c.Path, c.Args[0] = plain, plain
	}
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); c.Wait() }()
	out := bufio.NewReaderSize(stdout, 1<<20)
	call := func(msg map[string]any) string {
		t.Helper()
		b, err := json.Marshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := in.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
		if _, ok := msg["id"]; !ok {
			return ""
		}
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		return line
	}
	call(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}})
	call(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	// The resident peak (VmHWM) of the draftfs mcp process, in bytes.
	peak := func() int64 {
		t.Helper()
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return kb << 10
			}
		}
		t.Fatal("no VmHWM")
		return 0
	}
	write := func(id int, size int) string {
		t.Helper()
		text := strings.Repeat(strings.Repeat("x", 99)+"\n", size/100)
		return call(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{
			"name": "write_file", "arguments": map[string]any{"path": f.ws + "/big.txt", "content": text}}})
	}

	const size = 9_000_000
	before := peak()
	if r := write(2, size); !strings.Contains(r, "Successfully wrote") {
		t.Fatalf("write_file of 9 MB: %.300s", r)
	}
	// The text arrives as a JSON line, is decoded once and leaves as
	// base64: about 5 times the text at its peak (13 with the SDK's own
	// transport); the bound leaves room for the collector's timing.
	const most = 8
	if grew := peak() - before; grew > most*size {
		t.Errorf("a 9 MB write_file grew the resident peak by %d MB, over %d times the text", grew>>20, most)
	}
	if fi, err := os.Stat(f.disk("big.txt")); err == nil {
		t.Errorf("the write reached the disk: %v", fi.Size())
	}

	before = peak()
	r := write(3, 60_000_000)
	// Read and decoded, then refused: about twice the text (5 times with
	// the SDK's own transport).
	if grew := peak() - before; grew > 3*60_000_000 {
		t.Errorf("a refused 60 MB write_file grew the resident peak by %d MB, over 3 times the text", grew>>20)
	}
	if !strings.Contains(r, `"isError":true`) || !strings.Contains(r, "write limit") && !strings.Contains(r, "limit for one write") ||
		strings.Contains(r, "read limit") {
		t.Errorf("write_file of 60 MB: %.400s; want a refusal naming the write limit", r)
	}
}
