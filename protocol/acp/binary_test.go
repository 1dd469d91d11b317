package acp

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/draftfs/draftfs/protocol/acp/acptest"
)

// End-to-end: the built draftfs binary as the editor launches it,
// `draftfs acp -- node agent.mjs`, with the scripted SDK editor in front.

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildOut  []byte
)

// draftfsBinary builds cmd/draftfs once for the test binary's run.
func draftfsBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "draftfs-acp-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "draftfs")
		buildOut, buildErr = exec.Command("go", "build", "-o", builtBin, "github.com/draftfs/draftfs/cmd/draftfs").CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("build cmd/draftfs: %v\n%s", buildErr, buildOut)
	}
	return builtBin
}

// removeBinary deletes the built binary; TestMain calls it after the
// tests.
func removeBinary() {
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
}

// draftfsCmd runs the binary for a workspace and state and returns its
// stdout.
func draftfsCmd(t *testing.T, bin, ws, state, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--workspace", ws, "--state", state}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("draftfs %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// serveDaemon starts `draftfs serve` and waits for its ready line; the
// cleanup stops it with SIGTERM.
func serveDaemon(t *testing.T, bin, ws, state string) {
	t.Helper()
	cmd := exec.Command(bin, "--workspace", ws, "--state", state, "serve")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line
	}()
	select {
	case line := <-ready:
		if !strings.Contains(line, "on socket") {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("draftfs serve printed %q", line)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("draftfs serve is not ready")
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("draftfs serve: %v", err)
		}
	})
}

// runBinary runs editor.mjs, which launches `draftfs acp -- node
// agent.mjs` itself, as an editor would.
func runBinary(t *testing.T, bin, ws, state string, prompts any, acpFlags ...string) editorReport {
	t.Helper()
	node, scripts := acptest.Peers(t)
	pf, out := writePrompts(t, t.TempDir(), prompts)
	args := []string{filepath.Join(scripts, "editor.mjs"), "--cwd", ws, "--prompts", pf, "--out", out, "--terminal", "--", bin, "--workspace", ws, "--state", state, "acp"}
	args = append(append(args, acpFlags...), "--", node, filepath.Join(scripts, "agent.mjs"))
	editor := exec.Command(node, args...)
	editor.Stderr = os.Stderr
	done := make(chan error, 1)
	if err := editor.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- editor.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("editor.mjs: %v", err)
		}
	case <-time.After(60 * time.Second):
		editor.Process.Kill()
		<-done
		t.Fatal("editor.mjs did not finish")
	}
	return readReport(t, out)
}

// With a daemon: the agent reads the buffer an editor pushed to the
// daemon, and its writes are in the daemon's draft.
func TestBinaryWithDaemon(t *testing.T) {
	acptest.Peers(t)
	bin := draftfsBinary(t)
	ws, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("on disk\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "lines.txt"), []byte("1\n2\n3\n"), 0o644)
	serveDaemon(t, bin, ws, state)
	unsaved := "unsaved\r\nbuffer ✓ without newline"
	draftfsCmd(t, bin, ws, state, unsaved, "buffer", "open", "a.txt")

	rep := runBinary(t, bin, ws, state, []any{[]map[string]any{
		{"op": "read", "path": filepath.Join(ws, "a.txt")},
		{"op": "read", "path": filepath.Join(ws, "lines.txt"), "line": 3, "limit": 1},
		{"op": "write", "path": filepath.Join(ws, "src/new.go"), "content": "package src\n"},
		{"op": "terminal", "command": "make", "args": []string{"test"}},
	}})
	if rep.ConnectionError != "" || len(rep.Turns) != 1 || len(rep.Turns[0].Results) != 4 {
		t.Fatalf("report %+v", rep)
	}
	res := rep.Turns[0].Results
	if r := result[readResult](t, res[0]); r.Content == nil || *r.Content != unsaved {
		t.Errorf("buffer read as %+v", r)
	}
	if r := result[readResult](t, res[1]); r.Content == nil || *r.Content != "3\n" {
		t.Errorf("line 3: %+v", r)
	}
	if string(res[2]) != "{}" {
		t.Errorf("write: %s", res[2])
	}
	if got := draftfsCmd(t, bin, ws, state, "", "status"); got != "A src/new.go\n" {
		t.Errorf("draftfs status: %q", got)
	}
	if _, err := os.Stat(filepath.Join(ws, "src")); !os.IsNotExist(err) {
		t.Errorf("the write reached the disk")
	}
	if len(rep.Seen.Terminal) != 1 {
		t.Fatalf("terminal requests %v", rep.Seen.Terminal)
	}
	args, _ := rep.Seen.Terminal[0]["args"].([]any)
	want := []any{"--workspace", ws, "--draft", "main", "--state", state, "run", "--", "make", "test"}
	if rep.Seen.Terminal[0]["command"] != bin || strings.Join(strs(args), " ") != strings.Join(strs(want), " ") {
		t.Errorf("terminal/create reached the editor as %v", rep.Seen.Terminal[0])
	}
}

// Without a daemon the proxy serves the workspace itself; with
// --draft-per-session the writes are in the session's draft.
func TestBinaryWithoutDaemon(t *testing.T) {
	acptest.Peers(t)
	bin := draftfsBinary(t)
	ws, state := t.TempDir(), t.TempDir()
	rep := runBinary(t, bin, ws, state, []any{[]map[string]any{
		{"op": "write", "path": filepath.Join(ws, "f.txt"), "content": "x\n"},
		{"op": "read", "path": filepath.Join(ws, "f.txt")},
	}}, "--draft-per-session")
	if rep.ConnectionError != "" || len(rep.Turns) != 1 {
		t.Fatalf("report %+v", rep)
	}
	if r := result[readResult](t, rep.Turns[0].Results[1]); r.Content == nil || *r.Content != "x\n" {
		t.Errorf("read back %+v", r)
	}
	if got := draftfsCmd(t, bin, ws, state, "", "--draft", SessionDraft(rep.SessionID), "status"); got != "A f.txt\n" {
		t.Errorf("draftfs status of the session's draft: %q", got)
	}
	if got := draftfsCmd(t, bin, ws, state, "", "status"); got != "" {
		t.Errorf("draftfs status of main: %q", got)
	}
}

func strs(a []any) []string {
	out := make([]string, len(a))
	for i, v := range a {
		out[i], _ = v.(string)
	}
	return out
}
