package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/protocol/mcp/internal/peers"
)

// buildDraftfs builds cmd/draftfs for the test.
func buildDraftfs(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "draftfs")
	cmd := exec.Command("go", "build", "-o", bin, "../../cmd/draftfs")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/draftfs: %v\n%s", err, out)
	}
	return bin
}

// startDaemon runs `draftfs serve` for a workspace until the test ends
// (or stop is called) and waits for its ready line.
func startDaemon(t *testing.T, bin, workspace, stateRoot string) (stop func()) {
	t.Helper()
	cmd := exec.Command(bin, "--workspace", workspace, "--state", stateRoot, "serve")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("draftfs serve: %v\n%s", err, stderr.String())
		}
	}
	t.Cleanup(stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, "serving") {
		t.Fatalf("draftfs serve did not get ready: %q %v\n%s", line, err, stderr.String())
	}
	go io.Copy(io.Discard, out)
	return stop
}

// runClient runs the TypeScript SDK client with steps against a server
// command, and returns one answer per step. ROOT in the steps stands for
// root; in the answers root is written ROOT and its parent PARENT.
func runClient(t *testing.T, roots []string, steps []step, root string, server ...string) []answer {
	t.Helper()
	dir := peers.Dir(t)
	script := filepath.Join(t.TempDir(), "script.json")
	in := map[string]any{"steps": steps}
	if roots != nil {
		in["roots"] = roots
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte("ROOT"), []byte(root))
	if err := os.WriteFile(script, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", append([]string{filepath.Join(dir, "mcp", "client.mjs"), script, "--"}, server...)...)
	cmd.Env = append(os.Environ(), "TZ=UTC")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(server, " "), err, stderr.String())
	}
	out = bytes.ReplaceAll(out, []byte(root), []byte("ROOT"))
	out = bytes.ReplaceAll(out, []byte(filepath.Dir(root)), []byte("PARENT"))
	var answers []answer
	if err := json.Unmarshal(out, &answers); err != nil {
		t.Fatalf("client output: %v\n%s", err, out)
	}
	if len(answers) != len(steps) {
		t.Fatalf("%d answers for %d steps", len(answers), len(steps))
	}
	return answers
}

// servers are the two trees and the commands that serve them: the
// reference, and `draftfs mcp` reaching a running `draftfs serve` over
// its socket, with an editor buffer pushed by `draftfs buffer open`.
type servers struct {
	refRoot, draftRoot string
	state              string // the draft workspace's state directory
	ref, draft         []string
	stop               func() // stops the daemon, before the state is read
}

func newServers(t *testing.T) servers {
	dir := peers.Dir(t)
	base := t.TempDir()
	s := servers{
		refRoot:   filepath.Join(base, "ref", "tree"),
		draftRoot: filepath.Join(base, "draft", "tree"),
	}
	makeTree(t, s.refRoot)
	makeTree(t, s.draftRoot)
	s.ref = []string{"node", filepath.Join(dir, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), s.refRoot}
	bin := buildDraftfs(t)
	stateRoot := filepath.Join(base, "state")
	s.stop = startDaemon(t, bin, s.draftRoot, stateRoot)
	open := exec.Command(bin, "--workspace", s.draftRoot, "--state", stateRoot, "buffer", "open", filepath.Join(s.draftRoot, "open.txt"))
	open.Stdin = strings.NewReader(openBuffer)
	if out, err := open.CombinedOutput(); err != nil {
		t.Fatalf("draftfs buffer open: %v\n%s", err, out)
	}
	s.state = overlay.StateDir(stateRoot, s.draftRoot)
	s.draft = []string{bin, "--workspace", s.draftRoot, "--state", stateRoot, "mcp", s.draftRoot}
	return s
}

func runBoth(t *testing.T, s servers, roots func(root string) []string, steps []step) {
	t.Helper()
	var refRoots, draftRoots []string
	if roots != nil {
		refRoots, draftRoots = roots(s.refRoot), roots(s.draftRoot)
	}
	ref := runClient(t, refRoots, steps, s.refRoot, s.ref...)
	got := runClient(t, draftRoots, steps, s.draftRoot, s.draft...)
	for i, st := range steps {
		if st.check == nil {
			continue
		}
		t.Run(stepName(i, st), func(t *testing.T) { st.check(t, ref[i], got[i]) })
	}
}

func stepName(i int, st step) string {
	name := st.Name
	if name == "" {
		name = st.Op
	}
	return fmt.Sprintf("%03d-%s", i, name)
}
