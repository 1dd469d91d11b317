package control

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/draftfs/draftfs/overlay"
)

// TestNotifications: initialized clients hear about changes, commits
// and discards, with absolute paths.
func TestNotifications(t *testing.T) {
	e := newEnv(t)
	listener := e.client(t)
	if _, err := listener.Initialize("", ""); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	listener.Watch(func(n ChangeNotice) {
		mu.Lock()
		seen = append(seen, n.Change+" "+n.Path)
		mu.Unlock()
	})
	f, err := NewFiles(e.client(t), "", overlay.SourceMCP)
	must(t, err)
	must(t, f.WriteFile("n.txt", []byte("x"), 0o644))
	c := e.client(t)
	_, err = c.Commit("", CommitOptions{}, nil)
	must(t, err)
	must(t, f.WriteFile("m.txt", []byte("x"), 0o644))
	_, err = c.Discard("", DiscardOptions{All: true})
	must(t, err)
	want := []string{"commit " + filepath.Join(e.root, "n.txt"), "discard " + filepath.Join(e.root, "m.txt")}
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		s := strings.Join(seen, "\n")
		return strings.Contains(s, want[0]) && strings.Contains(s, want[1])
	}, func() string { return fmt.Sprint(seen) })

	// Watch through Files reports keys.
	keys := make(chan string, 100)
	stop := f.Watch(func(k string) { keys <- k })
	defer stop()
	must(t, f.WriteFile("w/k.txt", []byte("x"), 0o644))
	deadline := time.After(10 * time.Second)
	for {
		select {
		case k := <-keys:
			if k == "w/k.txt" {
				return
			}
		case <-deadline:
			t.Fatal("no change reported for w/k.txt")
		}
	}
}

func waitFor(t *testing.T, ok func() bool, what func() string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("timed out; have %s", what())
}

// TestSlowClient: a subscribed client that reads nothing neither blocks
// the daemon nor grows its memory; when it reads again it learns that it
// lost notifications.
func TestSlowClient(t *testing.T) {
	e := newEnv(t)
	slow := e.raw(t)
	slow.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	slow.answer()
	f, err := NewFiles(e.client(t), "", overlay.SourceMCP)
	must(t, err)
	done := make(chan error)
	go func() {
		for i := 0; i < 3*noticeQueue; i++ {
			if err := f.WriteFile(fmt.Sprintf("f%d", i), []byte("x"), 0o644); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("writes stalled behind a client that does not read")
	}
	time.Sleep(100 * time.Millisecond) // let the fan-out catch up
	for i := 0; ; i++ {
		m := slow.next()
		if strings.Contains(string(m.Params), `"overflow":true`) {
			break
		}
		if i > 4*noticeQueue {
			t.Fatal("no overflow notice")
		}
	}
	slow.send(`{"jsonrpc":"2.0","id":2,"method":"buffer/list"}`)
	if m := slow.answer(); m.Error != nil {
		t.Fatalf("the slow client's connection broke: %+v", m.Error)
	}
}
