package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/draftfs/draftfs/protocol/acp/acptest"
)

// benchResult is what agent.mjs's bench step measures: each
// fs/read_text_file round trip, from the agent's request to its answer.
type benchResult struct {
	Count     int
	P50us     float64
	P99us     float64
	MeanUs    float64
	OpsPerSec float64
	MBPerSec  float64
}

// BenchmarkReadTextFile measures round trips of fs/read_text_file made by
// the SDK agent: through the proxy, answered from the merged view
// ("proxy"), and against the plain SDK client answering from disk with
// fs.readFile, without a proxy ("node"), on the same files. b.N is the
// number of timed reads, after 50 untimed ones; ns/op is the mean round
// trip. Run with a fixed count so that the percentiles mean something:
//
//	go test -run '^$' -bench ReadTextFile -benchtime 2000x ./protocol/acp/
func BenchmarkReadTextFile(b *testing.B) {
	node, scripts := acptest.Peers(b)
	for _, size := range []struct {
		name  string
		bytes int
	}{{"1KiB", 1 << 10}, {"1MiB", 1 << 20}} {
		dir := b.TempDir()
		path := filepath.Join(dir, "file.txt")
		line := []byte("the quick brown fox jumps over the lazy dog, 0123456789\n")
		if err := os.WriteFile(path, bytes.Repeat(line, size.bytes/len(line)+1)[:size.bytes], 0o644); err != nil {
			b.Fatal(err)
		}
		prompts := func(n int) any {
			return []any{[]map[string]any{{"op": "bench", "path": path, "count": n, "warmup": 50, "size": size.bytes}}}
		}
		b.Run("proxy/"+size.name, func(b *testing.B) {
			run := runNode(b, newWorkspaces(b), dir, prompts(b.N), nodeOptions{noLog: true})
			report(b, run.report)
		})
		b.Run("node/"+size.name, func(b *testing.B) {
			tmp := b.TempDir()
			pf, out := writePrompts(b, tmp, prompts(b.N))
			editor := exec.Command(node, filepath.Join(scripts, "editor.mjs"), "--cwd", dir, "--prompts", pf, "--out", out, "--fs",
				"--", node, filepath.Join(scripts, "agent.mjs"))
			editor.Stderr = os.Stderr
			if err := editor.Run(); err != nil {
				b.Fatalf("editor.mjs: %v", err)
			}
			report(b, readReport(b, out))
		})
	}
}

func report(b *testing.B, rep editorReport) {
	b.Helper()
	if rep.ConnectionError != "" || len(rep.Turns) != 1 || rep.Turns[0].PromptError != nil || len(rep.Turns[0].Results) != 1 {
		if len(rep.Turns) == 1 && rep.Turns[0].PromptError != nil {
			b.Fatalf("the prompt failed: %s", rep.Turns[0].PromptError.Message)
		}
		b.Fatalf("report %+v", rep)
	}
	var r benchResult
	if err := json.Unmarshal(rep.Turns[0].Results[0], &r); err != nil || r.Count != b.N {
		b.Fatalf("bench result %s: %v", rep.Turns[0].Results[0], err)
	}
	b.ReportMetric(r.MeanUs*1000, "ns/op")
	b.ReportMetric(r.P50us, "p50-µs")
	b.ReportMetric(r.P99us, "p99-µs")
	b.ReportMetric(r.MBPerSec, "MB/s")
	b.ReportMetric(r.OpsPerSec, "reads/s")
}

// BenchmarkServeRead is the handler's own share of a round trip: a whole
// file read from the merged view, checked and encoded.
func BenchmarkServeRead(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20} {
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			e := newEngine(b)
			h := handler(Root{Dir: e.dir, Files: e.files})
			p := filepath.Join(e.dir, "f")
			line := []byte("the quick brown fox jumps over the lazy dog, 0123456789\n")
			if err := os.WriteFile(p, bytes.Repeat(line, size/len(line)+1)[:size], 0o644); err != nil {
				b.Fatal(err)
			}
			params := []byte(`{"sessionId":"s1","path":` + strconv.Quote(p) + `}`)
			var buf []byte
			b.SetBytes(int64(size))
			for b.Loop() {
				res, rerr := h.serve(context.Background(), MethodReadTextFile, params, buf)
				if rerr != nil {
					b.Fatal(rerr)
				}
				buf = res[:0]
			}
		})
	}
}
