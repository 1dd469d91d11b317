package acp

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/draftfs/draftfs/protocol/acp/acptest"
)

// editorReport is what editor.mjs writes.
type editorReport struct {
	Initialize map[string]any
	SessionID  string
	Turns      []struct {
		Results     []json.RawMessage
		Cancelled   []string
		Texts       []string
		PromptError *struct {
			Code    *int64
			Message string
		}
	}
	Seen struct {
		FS []struct {
			Method string
			Params map[string]any
		}
		Terminal    []map[string]any
		FSCancelled int
	}
	ConnectionError string
}

// nodeRun is one editor.mjs run with the proxy in between.
type nodeRun struct {
	report editorReport
	status int // the agent's, as Run returned it
	logs   string
}

// nodeOptions vary a runNode.
type nodeOptions struct {
	editorFlags []string
	configure   func(*Options)
	noLog       bool // do not log the raw traffic (benchmarks)
}

// runNode runs editor.mjs with prompts, its stdio connected to a proxy
// in this process, which runs agent.mjs; both log their raw traffic.
func runNode(t testing.TB, ws *workspaces, cwd string, prompts any, no nodeOptions) *nodeRun {
	t.Helper()
	node, scripts := acptest.Peers(t)
	tmp := t.TempDir()
	pf, out := writePrompts(t, tmp, prompts)
	toEditorR, toEditorW, _ := os.Pipe()
	fromEditorR, fromEditorW, _ := os.Pipe()
	args := []string{filepath.Join(scripts, "editor.mjs"), "--cwd", cwd, "--prompts", pf, "--out", out}
	agent := []string{node, filepath.Join(scripts, "agent.mjs")}
	if !no.noLog {
		args = append(args, "--log", tmp)
		agent = append([]string{"/usr/bin/env", "ACP_LOG_DIR=" + tmp}, agent...)
	}
	editor := exec.Command(node, append(args, no.editorFlags...)...)
	editor.Stdin, editor.Stdout, editor.Stderr = toEditorR, fromEditorW, os.Stderr
	if err := editor.Start(); err != nil {
		t.Fatal(err)
	}
	toEditorR.Close()
	fromEditorW.Close()
	opts := Options{
		Agent:  agent,
		Stdin:  fromEditorR,
		Stdout: toEditorW,
		Stderr: os.Stderr,
		Open:   ws.open,
	}
	if no.configure != nil {
		no.configure(&opts)
	}
	r := &nodeRun{logs: tmp}
	done := make(chan error, 1)
	go func() {
		var err error
		r.status, err = Run(context.Background(), opts)
		toEditorW.Close()
		done <- err
	}()
	waited := make(chan error, 1)
	go func() { waited <- editor.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("editor.mjs: %v", err)
		}
	case <-time.After(60 * time.Second):
		editor.Process.Kill()
		t.Fatal("editor.mjs did not finish")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy did not return after the editor exited")
	}
	r.report = readReport(t, out)
	return r
}

func writePrompts(t testing.TB, dir string, prompts any) (promptsFile, reportFile string) {
	t.Helper()
	promptsFile, reportFile = filepath.Join(dir, "prompts.json"), filepath.Join(dir, "report.json")
	b, _ := json.Marshal(prompts)
	if err := os.WriteFile(promptsFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return promptsFile, reportFile
}

func readReport(t testing.TB, file string) editorReport {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rep editorReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report %s: %v", b, err)
	}
	return rep
}

// lines returns a log's messages, one per line as sent.
func (r *nodeRun) lines(t testing.TB, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.logs, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func generic(t testing.TB, line string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return m
}

func result[T any](t testing.TB, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return v
}

type readResult struct {
	Content *string
	Length  int
	Error   *struct {
		Code    int64
		Message string
		Data    any
	}
}
