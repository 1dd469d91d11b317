package mcp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchTree writes n Go-like files of about 1.3 KiB, in packages of 100;
// a few call needleFunction and one defines it (as scripts/bench-mcp).
func benchTree(b *testing.B, root string, n int) {
	b.Helper()
	for i := range n {
		dir := filepath.Join(root, "src", fmt.Sprintf("pkg%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		var s strings.Builder
		s.WriteString("package pkg\n\nimport \"fmt\"\n\n")
		for f := range 8 {
			fmt.Fprintf(&s, "// helper%d does step %d of file %d.\nfunc helper%d_%d(x int) int {\n\tif x > %d {\n\t\treturn x * %d\n\t}\n\treturn fmt.Sprint(x) != \"\"\n}\n\n", f, f, i, i, f, f, f)
		}
		if i%500 == 7 {
			s.WriteString("func use() { needleFunction(1) }\n")
		}
		if i == n-3 {
			s.WriteString("func needleFunction(x int) int { return x }\n")
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file%03d.go", i%100)), []byte(s.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTools measures tool calls served in this process to an
// in-memory client over a 10,000-file tree: the server's own cost,
// without stdio or the client's. scripts/bench-mcp measures the whole
// round trip, side by side with the reference server.
func BenchmarkTools(b *testing.B) {
	base := b.TempDir()
	root := filepath.Join(base, "tree")
	benchTree(b, root, 10_000)
	ws, d, f := openView(b, root, filepath.Join(base, "state"))
	e := serveEnv(b, root, ws, d, f)
	for _, c := range []struct {
		name string
		tool string
		args map[string]any
	}{
		{"read_text_file", "read_text_file", m("path", "src/pkg042/file042.go")},
		{"read_text_file_head", "read_text_file", m("path", "src/pkg042/file042.go", "head", 10)},
		{"search_files", "search_files", m("path", ".", "pattern", "**/file04*.go")},
		{"search_content", "search_content", m("path", ".", "pattern", "needleFunction")},
		{"search_content_case", "search_content", m("path", ".", "pattern", "needleFunction", "caseSensitive", true)},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if r := e.call(c.tool, c.args); r.isError {
					b.Fatal(r.text)
				}
			}
		})
	}
}
