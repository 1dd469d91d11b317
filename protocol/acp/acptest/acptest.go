// Package acptest finds the ACP peers the tests run against: the scripted
// agent and editor of scripts/peers/acp, written with the ACP TypeScript
// SDK (@agentclientprotocol/sdk). Only tests import it.
package acptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Peers returns node and the ACP peers' directory (scripts/peers/acp),
// skipping the test when they are not installed (scripts/test.sh
// installs them with npm ci).
func Peers(t testing.TB) (node, dir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the ACP peer tests need Node.js and `npm ci` in scripts/peers")
	}
	_, file, _, _ := runtime.Caller(0)
	dir = filepath.Join(filepath.Dir(file), "..", "..", "..", "scripts", "peers")
	if _, err := os.Stat(filepath.Join(dir, "node_modules/@agentclientprotocol/sdk/package.json")); err != nil {
		t.Skip("@agentclientprotocol/sdk is not installed: run `npm ci` in scripts/peers")
	}
	return node, filepath.Join(dir, "acp")
}
