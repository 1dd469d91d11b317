package main

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/draftfs/draftfs/buffers"
	"github.com/draftfs/draftfs/protocol/control"
)

// TestConcurrentClients: editors push buffer changes over their own
// connections while an agent writes and the user commits, repeatedly.
// Every change applies, in order; every commit succeeds; editors hear of
// the commits of their files; the end state is what each side did.
func TestConcurrentClients(t *testing.T) {
	const editors, edits, commits = 4, 300, 10
	f := newFixture(t)
	for i := 0; i < editors; i++ {
		f.file(fmt.Sprintf("e%d.txt", i), "")
	}
	f.serve("")
	root := f.ws

	var wg sync.WaitGroup
	fail := make(chan string, 100)
	committed := make([]chan string, editors)
	for i := 0; i < editors; i++ {
		c := f.client()
		if _, err := c.Initialize("", "", "utf-8"); err != nil {
			t.Fatal(err)
		}
		committed[i] = make(chan string, 1000)
		ch := committed[i]
		c.Watch(func(n control.ChangeNotice) {
			if n.Change == "commit" || n.Overflow {
				select {
				case ch <- n.Path:
				default:
				}
			}
		})
		path := fmt.Sprintf("%s/e%d.txt", root, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.OpenBuffer(path, 1, ""); err != nil {
				fail <- err.Error()
				return
			}
			text := ""
			for v := 2; v <= edits+1; v++ {
				line := fmt.Sprintf("edit %d\n", v)
				at := strings.Count(text, "\n")
				text += line
				length := int64(len(text))
				ok, err := c.ChangeBuffer(path, int64(v), []buffers.Edit{{Range: buffers.Range{Start: buffers.Position{Line: at}, End: buffers.Position{Line: at}}, Text: line}}, length)
				if err != nil || !ok {
					fail <- fmt.Sprintf("%s v%d: applied %v, %v", path, v, ok, err)
					return
				}
			}
			list, err := c.Buffers()
			for _, b := range list {
				if root+"/"+b.Path == path && (b.Version != edits+1 || b.Size != int64(len(text))) {
					fail <- fmt.Sprintf("%s: buffer version %d, %d bytes; want %d, %d", path, b.Version, b.Size, edits+1, len(text))
				}
			}
			if err != nil {
				fail <- err.Error()
			}
		}()
	}
	agent := f.agent()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			key := fmt.Sprintf("agent/a%d.txt", i%20)
			if err := agent.WriteFile(key, []byte(fmt.Sprintf("agent %d\n", i)), 0o644); err != nil {
				fail <- err.Error()
				return
			}
			if i%25 == 0 { // the agent edits the editors' files too
				e := fmt.Sprintf("e%d.txt", (i/25)%editors)
				if err := agent.WriteFile(e, []byte("agent's version\n"), 0o644); err != nil {
					fail <- err.Error()
					return
				}
			}
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < commits; i++ {
			// --force: the agent's copies of the editors' files conflict
			// with the buffers as they grow.
			if r := f.run("commit", "--force"); r.code != 0 {
				fail <- fmt.Sprintf("commit %d: %s", i, r)
			}
		}
	}()
	wg.Wait()
	close(fail)
	for msg := range fail {
		t.Error(msg)
	}
	if t.Failed() {
		return
	}
	f.ok("commit", "--force")
	if r := f.ok("status"); r.out != "" {
		t.Fatalf("status after the last commit: %s", r)
	}
	for i := 0; i < 20; i++ {
		if got := f.disk(fmt.Sprintf("agent/a%d.txt", i)); got != fmt.Sprintf("agent %d\n", 180+i) {
			t.Errorf("agent/a%d.txt: %q", i, got)
		}
	}
	// Every editor file the agent wrote was committed, and its editor
	// was told: of the commit, or that notices were lost (an overflow
	// notice for the workspace root: re-read everything). Notices travel
	// on their own: the last may still be on its way when the commit
	// command returns.
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < editors; i++ {
		want := fmt.Sprintf("%s/e%d.txt", root, i)
		switch heard(committed[i], []string{want, root}, deadline) {
		case "":
			t.Errorf("editor %d heard of no commit of %s", i, want)
		case root:
			t.Logf("editor %d was told notices were lost", i)
		}
	}
}

// heard returns the first of wants to arrive on ch before deadline; ""
// if none did.
func heard(ch <-chan string, wants []string, deadline time.Time) string {
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	for {
		select {
		case got := <-ch:
			if slices.Contains(wants, got) {
				return got
			}
		case <-timeout.C:
			return ""
		}
	}
}
