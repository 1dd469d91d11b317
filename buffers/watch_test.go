package buffers

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
)

func TestWatchEvents(t *testing.T) {
	s := NewSet()
	var got []string
	cancel := s.Watch(func(e Event) { got = append(got, fmt.Sprintf("%s %s %d", e.Kind, e.Path, e.Version)) })
	must(t, s.Open("f", 1, []byte("a")))
	s.Replace("f", 1, []byte("stale"))
	s.Replace("f", 2, []byte("b"))
	s.Edit("f", 3, UTF16, []Edit{ed(0, 0, 0, 0, "x")}, -1)
	s.Edit("f", 4, UTF16, []Edit{ed(0, 1, 0, 0, "x")}, -1) // rejected
	must(t, s.Save("f"))
	must(t, s.Open("f", 1, nil))
	must(t, s.Close("f"))
	cancel()
	cancel()
	must(t, s.Open("g", 1, nil))
	want := []string{"opened f 1", "changed f 2", "changed f 3", "saved f 3", "opened f 1", "closed f 1"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n%q\nwant\n%q", got, want)
	}
	if Closed.String() != "closed" || EventKind(0).String() != "EventKind(0)" {
		t.Error("EventKind.String")
	}
}

// TestWatchReentrant: a watcher may read and change the Set; its change
// is reported after the event being handled, not inside it.
func TestWatchReentrant(t *testing.T) {
	s := NewSet()
	var got []string
	s.Watch(func(e Event) {
		got = append(got, fmt.Sprintf("%s %d", e.Kind, e.Version))
		if e.Kind == Changed && e.Version < 4 {
			snap := get(t, s, e.Path)
			if _, err := s.Edit(e.Path, e.Version+1, UTF8, []Edit{ed(0, 0, 0, 0, "x")}, int64(len(snap.Text)+1)); err != nil {
				t.Error(err)
			}
		}
		_ = s.List()
	})
	must(t, s.Open("f", 1, nil))
	s.Replace("f", 2, nil)
	want := []string{"opened 1", "changed 2", "changed 3", "changed 4"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	if snap := get(t, s, "f"); string(snap.Text) != "xx" {
		t.Fatalf("text %q", snap.Text)
	}
}

// TestSlowWatcher: while a watcher is stuck, readers and writers of the
// Set carry on; the stuck events are delivered, in order, afterwards.
func TestSlowWatcher(t *testing.T) {
	s := NewSet()
	release := make(chan struct{})
	stuck := make(chan struct{})
	var mu sync.Mutex
	var got []string
	s.Watch(func(e Event) {
		if e.Path == "slow" && e.Kind == Opened {
			close(stuck)
			<-release
		}
		mu.Lock()
		got = append(got, e.Kind.String()+" "+e.Path)
		mu.Unlock()
	})
	done := make(chan struct{})
	go func() {
		must(t, s.Open("slow", 1, []byte("x")))
		close(done)
	}()
	<-stuck
	must(t, s.Open("other", 1, []byte("y")))
	if _, err := s.Edit("slow", 2, UTF16, []Edit{ed(0, 1, 0, 1, "z")}, 2); err != nil {
		t.Fatal(err)
	}
	if snap := get(t, s, "slow"); string(snap.Text) != "xz" {
		t.Fatalf("Get during a stuck watcher: %q", snap.Text)
	}
	_ = s.List()
	close(release)
	<-done
	mu.Lock()
	defer mu.Unlock()
	want := []string{"opened slow", "opened other", "changed slow"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func TestWatcherPanicKeepsDelivery(t *testing.T) {
	s := NewSet()
	var got []Event
	s.Watch(func(e Event) {
		if e.Version == 1 {
			panic("watcher bug")
		}
		got = append(got, e)
	})
	func() {
		defer func() { _ = recover() }()
		_ = s.Open("f", 1, nil)
	}()
	must(t, s.Open("f", 2, nil))
	if len(got) != 1 || got[0].Version != 2 {
		t.Fatalf("after a panicking watcher: %+v", got)
	}
}
