// Package peers runs the reference MCP implementations (the TypeScript
// SDK and @modelcontextprotocol/server-filesystem, installed in
// scripts/peers) for the tests that compare draftfs's answers with theirs.
// Only tests import it.
package peers

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir is scripts/peers with its npm packages installed; the test is
// skipped when node or the packages are missing (scripts/test.sh installs
// them with npm ci).
func Dir(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "scripts", "peers")
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the tests against the reference MCP peers need it")
	}
	for _, p := range []string{
		"node_modules/@modelcontextprotocol/sdk/package.json",
		"node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
	} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Skipf("%s is missing: run `npm ci` in scripts/peers (scripts/test.sh does)", p)
		}
	}
	return dir
}

// RunNode runs an ES module given as source in scripts/peers, so bare
// imports resolve to its node_modules, with stdin as input; it returns
// stdout.
func RunNode(t testing.TB, source string, stdin []byte) []byte {
	t.Helper()
	cmd := exec.Command("node", "--input-type=module", "-e", source)
	cmd.Dir = Dir(t)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	return out
}
