package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/draftfs/draftfs/buffers"
	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/agent"
)

// TestReview runs the review workflow through a Client.
func TestReview(t *testing.T) {
	e := newEnv(t)
	e.write(t, "keep.txt", "one\ntwo\n")
	c := e.client(t)
	f, err := NewFiles(c, "", overlay.SourceMCP)
	if err != nil {
		t.Fatal(err)
	}
	if f.Root() != e.root {
		t.Fatalf("root %q, want %q", f.Root(), e.root)
	}
	must(t, f.WriteFile("keep.txt", []byte("one\nTWO\n"), 0o644))
	must(t, f.WriteFile("new/file.txt", []byte("hi\n"), 0o600))
	must(t, f.WriteFile("bin", []byte{0, 1, 2}, 0o644))

	st, err := c.Status("")
	must(t, err)
	got := ""
	for _, s := range st {
		got += fmt.Sprintf("{%s %s %s %v %v} ", s.Path, s.Change, s.From, s.Conflict, s.Ignored)
	}
	want := "{bin added  false false} {keep.txt modified  false false} {new/file.txt added  false false} "
	if got != want {
		t.Fatalf("status %s", got)
	}
	diffs, err := c.Diff("", DiffOptions{Paths: []string{filepath.Join(e.root, "keep.txt")}})
	must(t, err)
	if len(diffs) != 1 || !strings.Contains(diffs[0].Patch, "-two\n+TWO\n") {
		t.Fatalf("diff %+v", diffs)
	}
	diffs, err = c.Diff("", DiffOptions{Paths: []string{"bin"}})
	must(t, err)
	if len(diffs) != 1 || !diffs[0].Binary || !strings.Contains(diffs[0].Patch, "Binary files") {
		t.Fatalf("binary diff %+v", diffs)
	}

	dry, err := c.Commit("", CommitOptions{DryRun: true}, nil)
	must(t, err)
	if !dry.DryRun || len(dry.Applied) < 3 {
		t.Fatalf("dry run %+v", dry)
	}
	if b, _ := os.ReadFile(filepath.Join(e.root, "keep.txt")); string(b) != "one\ntwo\n" {
		t.Fatal("dry run wrote the disk")
	}
	var progress [][2]int
	res, err := c.Commit("", CommitOptions{Paths: []string{"keep.txt", "new"}}, func(d, n int) { progress = append(progress, [2]int{d, n}) })
	must(t, err)
	if res.ID == 0 || len(progress) == 0 || progress[len(progress)-1][0] != progress[len(progress)-1][1] {
		t.Fatalf("commit %+v, progress %v", res, progress)
	}
	if b, _ := os.ReadFile(filepath.Join(e.root, "keep.txt")); string(b) != "one\nTWO\n" {
		t.Fatalf("disk after commit: %q", b)
	}
	st, _ = c.Status("")
	if len(st) != 1 || st[0].Path != "bin" {
		t.Fatalf("status after commit %+v", st)
	}
	u, err := c.Undo("")
	must(t, err)
	if u.ID != res.ID {
		t.Fatalf("undo %+v", u)
	}
	if b, _ := os.ReadFile(filepath.Join(e.root, "keep.txt")); string(b) != "one\ntwo\n" {
		t.Fatalf("disk after undo: %q", b)
	}
	if _, err := c.Undo(""); !errors.Is(err, overlay.ErrNothingToUndo) {
		t.Fatalf("second undo: %v", err)
	}
	dropped, err := c.Discard("", DiscardOptions{Paths: []string{"bin"}})
	must(t, err)
	if fmt.Sprint(dropped) != "[bin]" {
		t.Fatalf("discard %v", dropped)
	}
	log, err := c.Log("")
	must(t, err)
	var ops []string
	for _, l := range log {
		ops = append(ops, l.Op+":"+string(l.Source))
	}
	if s := strings.Join(ops, " "); !strings.Contains(s, ":mcp") || !strings.Contains(s, "commit:cli") || !strings.Contains(s, "discard:cli") {
		t.Fatalf("log %s", s)
	}
}

// TestConflict: a refused commit comes back with its report and the
// engine's error.
func TestConflict(t *testing.T) {
	e := newEnv(t)
	e.write(t, "c.txt", "base\n")
	c := e.client(t)
	f, err := NewFiles(c, "", overlay.SourceACP)
	must(t, err)
	must(t, f.WriteFile("c.txt", []byte("agent\n"), 0o644))
	time.Sleep(10 * time.Millisecond) // a new mtime on coarse clocks
	e.write(t, "c.txt", "user\n")
	st, err := c.Status("")
	must(t, err)
	if len(st) != 1 || !st[0].Conflict {
		t.Fatalf("status %+v", st)
	}
	res, err := c.Commit("", CommitOptions{}, nil)
	if !errors.Is(err, overlay.ErrConflict) || res == nil || len(res.Conflicts) != 1 || res.Conflicts[0].Path != "c.txt" {
		t.Fatalf("commit: %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.root, "c.txt")); string(b) != "user\n" {
		t.Fatalf("refused commit wrote %q", b)
	}
	if _, err := c.Commit("", CommitOptions{Force: true}, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.root, "c.txt")); string(b) != "agent\n" {
		t.Fatalf("forced commit wrote %q", b)
	}
}

// TestFilesParity runs the same operations on agent.Local and on
// control.Files and expects the same results and errors.
func TestFilesParity(t *testing.T) {
	e := newEnv(t)
	e.write(t, "dir/a.txt", "a\n")
	e.write(t, "dir/b.txt", "b\n")
	must(t, os.Symlink("/etc", filepath.Join(e.root, "out")))
	must(t, os.Symlink("dir", filepath.Join(e.root, "in")))
	d, err := e.ws.Draft("")
	must(t, err)
	local := agent.NewLocal(d, overlay.SourceMCP)
	remote, err := NewFiles(e.client(t), "", overlay.SourceMCP)
	must(t, err)

	type step func(f agent.Files) string
	show := func(v any, err error) string {
		if err != nil {
			return fmt.Sprintf("error errno=%d notexist=%v outside=%v toolarge=%v",
				overlay.Errno(err), errors.Is(err, fs.ErrNotExist), errors.Is(err, overlay.ErrOutside), errors.Is(err, agent.ErrTooLarge))
		}
		switch i := v.(type) { // mtimes differ between the two runs
		case agent.Info:
			i.ModTime = time.Time{}
			v = i
		case []agent.Info:
			for k := range i {
				i[k].ModTime = time.Time{}
			}
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	steps := []step{
		func(f agent.Files) string { return show(f.Resolve("in/a.txt")) },
		func(f agent.Files) string { return show(f.Resolve(e.root + "/dir/../dir/a.txt")) },
		func(f agent.Files) string { return show(f.Resolve("out/passwd")) },
		func(f agent.Files) string { return show(f.Resolve("../x")) },
		func(f agent.Files) string { return show(f.Resolve("")) },
		func(f agent.Files) string { return show(f.Stat("dir/a.txt")) },
		func(f agent.Files) string { return show(f.Stat("")) },
		func(f agent.Files) string { return show(f.Lstat("in")) },
		func(f agent.Files) string { return show(f.Stat("nope")) },
		func(f agent.Files) string { return show(f.ReadDir("dir")) },
		func(f agent.Files) string { return show(f.ReadDir("dir/a.txt")) },
		func(f agent.Files) string { return show(f.ReadFile("dir/a.txt", 0)) },
		func(f agent.Files) string { return show(f.ReadFile("dir/a.txt", 1)) },
		func(f agent.Files) string { return show(f.ReadFile("dir", 0)) },
		func(f agent.Files) string { return show(0, f.WriteFile("dir/c.txt", []byte("c"), 0o600)) },
		func(f agent.Files) string { return show(f.Stat("dir/c.txt")) },
		func(f agent.Files) string { return show(0, f.WriteFile("dir/a.txt/x", nil, 0o644)) },
		func(f agent.Files) string { return show(0, f.MkdirAll("x/y/z")) },
		func(f agent.Files) string { return show(0, f.Remove("dir")) },
		func(f agent.Files) string { return show(0, f.Remove("dir/b.txt")) },
		func(f agent.Files) string { return show(0, f.Rename("dir/c.txt", "x/c.txt")) },
		func(f agent.Files) string { return show(0, f.Rename("nope", "x/nope")) },
		func(f agent.Files) string { return show(f.Status()) },
		func(f agent.Files) string { return show(f.Status("x")) },
		func(f agent.Files) string { return show(f.Diff("dir")) },
		func(f agent.Files) string { return show(0, f.Discard([]string{"dir/b.txt"})) },
		func(f agent.Files) string { return show(0, f.RemoveAll("x")) },
		func(f agent.Files) string { return show(f.Status()) },
		func(f agent.Files) string { return show(0, f.Discard(nil)) },
		func(f agent.Files) string { return show(f.Status()) },
	}
	// Run each step on one side, undo its effect by discarding, run it
	// on the other: both must see the same draft.
	for i, s := range steps {
		want := s(local)
		if _, err := d.Discard(nil, overlay.SourceCLI); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < i; j++ {
			steps[j](local)
		}
		got := s(remote)
		if got != want {
			t.Errorf("step %d: remote %s, local %s", i, got, want)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestErrorMapping: engine errors cross the wire and come back as the
// same errors.
func TestErrorMapping(t *testing.T) {
	for _, err := range []error{
		overlay.ErrConflict, overlay.ErrNothingToUndo, overlay.ErrDiskChanged, overlay.ErrOutside,
		overlay.ErrCorrupt, buffers.ErrNotOpen, buffers.ErrResync, buffers.ErrBadRange, agent.ErrTooLarge,
		&fs.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT},
		&fs.PathError{Op: "rmdir", Path: "/x", Err: syscall.ENOTEMPTY},
		fmt.Errorf("wrapped: %w", fs.ErrExist),
	} {
		back := fromRPC(toRPC(fmt.Errorf("ctx: %w", err)))
		var target error = err
		var pe *fs.PathError
		if errors.As(err, &pe) {
			target = pe.Err
		}
		if errors.Is(err, fs.ErrExist) {
			target = fs.ErrExist
		}
		if !errors.Is(back, target) {
			t.Errorf("%v came back as %v (%#v)", err, back, back)
		}
		if target != err && overlay.Errno(back) != overlay.Errno(err) {
			t.Errorf("%v: errno %v, want %v", err, overlay.Errno(back), overlay.Errno(err))
		}
	}
	if e := toRPC(errors.New("boom")); e.Code != -32603 || e.Message != "boom" {
		t.Errorf("plain error: %+v", e)
	}
	if e := toRPC(invalidParams("x")); e.Code != -32602 {
		t.Errorf("param error: %+v", e)
	}
}

// TestRequestsSettle: a request is answered only once the followed
// subscribers (the mounts) applied what it changed, so a read through a
// mount after the answer sees the change.
func TestRequestsSettle(t *testing.T) {
	e := newEnv(t)
	sub := e.ws.SubscribeFollowed()
	defer sub.Close()
	r := e.raw(t)
	answer := func() <-chan reply {
		ch := make(chan reply, 1)
		go func() { ch <- r.answer() }()
		return ch
	}
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"t"}}}`)
	select {
	case m := <-answer(): // initialize changes nothing: answered at once
		if m.Error != nil {
			t.Fatal(m.Error)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("initialize was not answered")
	}
	r.send(`{"jsonrpc":"2.0","id":2,"method":"buffer/didOpen","params":{"path":"f.txt","version":1,"text":"x"}}`)
	answered := answer()
	<-sub.C
	select {
	case m := <-answered:
		t.Fatalf("answered before the subscriber applied the change: %s", m.Result)
	case <-time.After(100 * time.Millisecond):
	}
	sub.Applied(1)
	select {
	case m := <-answered:
		if m.Error != nil {
			t.Fatal(m.Error)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not answered after the subscriber applied the change")
	}
}

// TestPreamble: every draft and buffer method checks its params before
// it opens a draft or a buffer, and methods that read never create a
// draft.
func TestPreamble(t *testing.T) {
	e := newEnv(t)
	r := e.raw(t)
	for i, c := range []struct{ req, want string }{
		{`"draft/commit","params":{"draft":"new1","paths":["a"],"hunks":["h"]}`, "not both"},
		{`"draft/discard","params":{"draft":"new1"}`, `give one of "paths", "hunks"`},
		{`"fs/writeFile","params":{"draft":"new1","source":"mcp","path":"a","data":"","mode":65535}`, "permission bits only"},
		{`"fs/stat","params":{"draft":"new1","source":"nobody","path":"a"}`, `"source" must be`},
		{`"draft/read","params":{"draft":"new1"}`, `"path" is missing`},
		{`"buffer/didChange","params":{"path":"new1","version":1,"text":"x","changes":[]}`, "not both"},
		{`"buffer/didChange","params":{"path":"new1","version":1,"text":"x","length":-1}`, "must not be negative"},
		{`"buffer/didSave","params":{}`, `"path" is missing`},
		{`"draft/status","params":{"draft":"new1"}`, `no draft "new1"`},
		{`"draft/timeline","params":{"draft":"new1"}`, `no draft "new1"`},
	} {
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%s}`, i+1, c.req))
		a := r.answer()
		if a.Error == nil || !strings.Contains(a.Error.Message, c.want) {
			t.Errorf("%s: got %+v %s, want an error saying %q", c.req, a.Error, a.Result, c.want)
		}
	}
	if names, err := e.ws.Drafts(); err != nil || slices.Contains(names, "new1") {
		t.Errorf("drafts after refused requests: %v, %v: want no new1", names, err)
	}
}
