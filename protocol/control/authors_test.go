package control

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/draftfs/draftfs/overlay"
)

// TestReviewAuthors: a review method is logged as by who called it: an
// editor (a client that pushed buffers) as the editor, by its name; a
// command by its command line (ServerOptions.Who); an agent's fs/*
// writes keep their source and name no one.
func TestReviewAuthors(t *testing.T) {
	ws, err := overlay.Open(overlay.Options{Root: t.TempDir(), StateDir: t.TempDir()})
	must(t, err)
	defer ws.Close()
	srv := NewServer(ws, ServerOptions{Who: func(pid int) string { return fmt.Sprintf("draftfs commit (pid %d)", pid) }})
	defer srv.Close()
	connect := func() *Client {
		c, err := srv.Connect()
		must(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	cli, editor := connect(), connect()
	_, err = editor.Initialize("test-editor", "")
	must(t, err)
	must(t, editor.OpenBuffer(filepath.Join(ws.Root(), "c.txt"), 1, "c\n"))
	f, err := NewFiles(connect(), "", overlay.SourceMCP)
	must(t, err)
	must(t, f.WriteFile("a.txt", []byte("a\n"), 0o644))
	must(t, f.WriteFile("b.txt", []byte("b\n"), 0o644))
	_, err = cli.Commit("", CommitOptions{Paths: []string{"a.txt"}}, nil)
	must(t, err)
	_, err = editor.Discard("", DiscardOptions{Paths: []string{"b.txt"}})
	must(t, err)
	log, err := cli.Log("")
	must(t, err)
	var got []string
	for _, l := range log {
		got = append(got, fmt.Sprintf("%s %s %s", l.Op, l.Source, l.By))
	}
	want := []string{
		"create mcp ", "create mcp ",
		fmt.Sprintf("commit cli draftfs commit (pid %d)", os.Getpid()),
		"discard editor test-editor",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("log: %q, want %q", got, want)
	}
}
