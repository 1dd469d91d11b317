//go:build linux

package overlay

import (
	"testing"
	"time"
)

// A large paced publish (a commit's changes) gets its room while single
// paced changes (the disk watcher's) keep coming: they would otherwise
// take each place a slow subscriber frees, and the large one, waiting
// for room for a whole part and never for a subscriber that makes no
// progress, would wait for ever.
func TestPublishPacedNotStarved(t *testing.T) {
	f := &feed{}
	sub := f.subscribe(true)
	defer sub.Close()
	go func() {
		for range sub.C {
			time.Sleep(20 * time.Microsecond)
			sub.Applied(1)
		}
	}()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				f.publishPaced([]Change{{Path: "trickle", Kind: ChangeDisk}})
			}
		}
	}()
	for len(sub.ch) < cap(sub.ch)-1 {
		time.Sleep(time.Millisecond)
	}
	done := make(chan struct{})
	go func() {
		f.publishPaced(make([]Change, feedQueue))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a paced publish of a queue's worth of changes waited 30 s behind single ones")
	}
	if sub.TakeLost() {
		t.Error("the subscriber lost changes")
	}
}
