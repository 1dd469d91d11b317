package buffers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func get(t testing.TB, s *Set, p string) Snapshot {
	t.Helper()
	snap, ok := s.Get(p)
	if !ok {
		t.Fatalf("Get(%q): not open", p)
	}
	return snap
}

func TestOpenGet(t *testing.T) {
	s := NewSet()
	text := []byte("package main\r\n\xff")
	before := time.Now()
	must(t, s.Open("src/main.go", 7, text))
	text[0] = 'X' // Open copied it
	snap := get(t, s, "src/main.go")
	if string(snap.Text) != "package main\r\n\xff" || snap.Version != 7 || !snap.Dirty || snap.Path != "src/main.go" {
		t.Fatalf("snapshot %+v", snap)
	}
	if snap.Modified.Before(before) {
		t.Errorf("Modified %v is before the Open at %v", snap.Modified, before)
	}
	// Open replaces whatever the version.
	must(t, s.Open("src/main.go", 3, nil))
	snap = get(t, s, "src/main.go")
	if snap.Text == nil || len(snap.Text) != 0 || snap.Version != 3 {
		t.Fatalf("after reopening empty: %+v", snap)
	}
}

func TestStaleVersions(t *testing.T) {
	s := NewSet()
	must(t, s.Open("f", 5, []byte("abc")))
	for _, v := range []int64{5, 4, -1} {
		if applied, err := s.Replace("f", v, []byte("new")); applied || err != nil {
			t.Errorf("Replace version %d: %v, %v; want ignored", v, applied, err)
		}
		if applied, err := s.Edit("f", v, UTF16, []Edit{ed(0, 0, 0, 0, "x")}, -1); applied || err != nil {
			t.Errorf("Edit version %d: %v, %v; want ignored", v, applied, err)
		}
		// A stale batch is ignored even if it is malformed.
		if applied, err := s.Edit("f", v, UTF16, []Edit{ed(0, 2, 0, 1, "x")}, 99); applied || err != nil {
			t.Errorf("bad stale Edit version %d: %v, %v; want ignored", v, applied, err)
		}
	}
	if snap := get(t, s, "f"); string(snap.Text) != "abc" || snap.Version != 5 {
		t.Fatalf("after stale changes: %q version %d", snap.Text, snap.Version)
	}
	if applied, err := s.Replace("f", 6, []byte("new")); !applied || err != nil {
		t.Fatalf("Replace version 6: %v, %v", applied, err)
	}
	if applied, err := s.Edit("f", 8, UTF8, []Edit{ed(0, 3, 0, 3, "!")}, 4); !applied || err != nil {
		t.Fatalf("Edit version 8: %v, %v", applied, err)
	}
	if snap := get(t, s, "f"); string(snap.Text) != "new!" || snap.Version != 8 {
		t.Fatalf("got %q version %d", snap.Text, snap.Version)
	}
}

func TestEmptyBatchBumpsVersionOnly(t *testing.T) {
	s := NewSet()
	must(t, s.Open("f", 1, []byte("abc")))
	must(t, s.Save("f"))
	before := get(t, s, "f")
	if applied, err := s.Edit("f", 2, UTF16, nil, -1); !applied || err != nil {
		t.Fatalf("Edit: %v, %v", applied, err)
	}
	after := get(t, s, "f")
	if after.Version != 2 || after.Dirty || !after.Modified.Equal(before.Modified) || &after.Text[0] != &before.Text[0] {
		t.Fatalf("before %+v after %+v", before, after)
	}
}

func TestSaveKeepsText(t *testing.T) {
	s := NewSet()
	must(t, s.Open("f", 1, []byte("one\n")))
	must(t, s.Save("f"))
	snap := get(t, s, "f")
	if snap.Dirty || string(snap.Text) != "one\n" {
		t.Fatalf("after Save: %+v", snap)
	}
	if _, err := s.Edit("f", 2, UTF16, []Edit{ed(1, 0, 1, 0, "two\n")}, 8); err != nil {
		t.Fatal(err)
	}
	if snap := get(t, s, "f"); !snap.Dirty || string(snap.Text) != "one\ntwo\n" {
		t.Fatalf("edit after Save: %+v", snap)
	}
}

func TestNotOpen(t *testing.T) {
	s := NewSet()
	must(t, s.Open("a", 1, nil))
	must(t, s.Close("a"))
	if _, ok := s.Get("a"); ok {
		t.Error("Get after Close found the buffer")
	}
	_, errReplace := s.Replace("a", 2, nil)
	_, errEdit := s.Edit("a", 2, UTF16, nil, -1)
	for name, err := range map[string]error{"Replace": errReplace, "Edit": errEdit, "Save": s.Save("a"), "Close": s.Close("a")} {
		if !errors.Is(err, ErrNotOpen) || !strings.Contains(err.Error(), `"a"`) {
			t.Errorf("%s: %v, want ErrNotOpen naming the path", name, err)
		}
	}
}

func TestPaths(t *testing.T) {
	s := NewSet()
	for _, p := range []string{"", ".", "/a", "../a", "a/../b", "a/..", "a//b", "a/", "./a"} {
		if err := s.Open(p, 1, nil); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("Open(%q): %v, want fs.ErrInvalid", p, err)
		}
		if _, err := s.Edit(p, 1, UTF16, nil, -1); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("Edit(%q): %v, want fs.ErrInvalid", p, err)
		}
		if _, ok := s.Get(p); ok {
			t.Errorf("Get(%q) found something", p)
		}
	}
	for _, p := range []string{"a", "a..b/c", "src/main.go", ".hidden/x"} {
		must(t, s.Open(p, 1, nil))
	}
}

func TestList(t *testing.T) {
	s := NewSet()
	must(t, s.Open("b/x", 3, []byte("12345")))
	must(t, s.Open("a", 1, []byte("é")))
	must(t, s.Open("c", 2, nil))
	must(t, s.Save("a"))
	want := []Info{{"a", 1, false, 2}, {"b/x", 3, true, 5}, {"c", 2, true, 0}}
	if got := s.List(); !reflect.DeepEqual(got, want) {
		t.Fatalf("List = %+v, want %+v", got, want)
	}
	j, err := json.Marshal(want[0])
	if err != nil || string(j) != `{"path":"a","version":1,"dirty":false,"size":2}` {
		t.Fatalf("json %s, %v", j, err)
	}
	if got := NewSet().List(); got == nil || len(got) != 0 {
		t.Fatalf("empty List = %#v, want an empty slice", got)
	}
}

func TestSnapshotCaching(t *testing.T) {
	s := newSet(tinyChunking)
	must(t, s.Open("f", 1, []byte(strings.Repeat("line of text\n", 100))))
	if _, err := s.Edit("f", 2, UTF16, []Edit{ed(50, 0, 50, 0, "new ")}, -1); err != nil {
		t.Fatal(err)
	}
	first := get(t, s, "f")
	again := get(t, s, "f")
	if &first.Text[0] != &again.Text[0] {
		t.Fatal("a second Get copied the text again")
	}
	keep := string(first.Text)
	if _, err := s.Edit("f", 3, UTF16, []Edit{ed(0, 0, 999, 0, "all gone")}, -1); err != nil {
		t.Fatal(err)
	}
	if string(first.Text) != keep {
		t.Fatal("an edit changed an earlier snapshot")
	}
	if got := get(t, s, "f"); string(got.Text) != "all gone" || cap(got.Text) != len(got.Text) {
		t.Fatalf("after edit: %q (cap %d)", got.Text, cap(got.Text))
	}
}

// TestConcurrent runs one writer per buffer against readers of all of
// them (run it with -race). Each writer keeps its text at "x\n" per
// version, so every snapshot can be checked for consistency.
func TestConcurrent(t *testing.T) {
	s := NewSet()
	const buffers, versions = 16, 300
	var mu sync.Mutex
	last := map[string]int64{}
	s.Watch(func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Kind == Changed && e.Version != last[e.Path]+1 {
			t.Errorf("%s: event for version %d after %d", e.Path, e.Version, last[e.Path])
		}
		last[e.Path] = e.Version
	})
	var writers, readers sync.WaitGroup
	stop := make(chan struct{})
	for i := range buffers {
		p := fmt.Sprintf("dir/f%02d", i)
		must(t, s.Open(p, 0, nil))
		writers.Go(func() {
			for v := int64(1); v <= versions; v++ {
				var err error
				if v%50 == 0 {
					_, err = s.Replace(p, v, []byte(strings.Repeat("x\n", int(v))))
				} else {
					_, err = s.Edit(p, v, Encoding(v%2), []Edit{ed(int(v), 0, int(v), 0, "x\n")}, 2*v)
				}
				if err != nil {
					t.Error(err)
					return
				}
				if v%100 == 0 {
					must(t, s.Save(p))
				}
			}
		})
	}
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, info := range s.List() {
					snap := get(t, s, info.Path)
					if int64(len(snap.Text)) != 2*snap.Version || strings.Count(string(snap.Text), "x\n") != int(snap.Version) {
						t.Errorf("%s: version %d with %d bytes", snap.Path, snap.Version, len(snap.Text))
						return
					}
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	readers.Wait()
	for _, info := range s.List() {
		if info.Version != versions || info.Size != 2*versions {
			t.Errorf("%+v", info)
		}
	}
}

// TestOpenCloseRace: Open, Close and Edit of one path racing each other
// still report a coherent history: nothing happens to a closed buffer.
func TestOpenCloseRace(t *testing.T) {
	s := NewSet()
	open := false
	s.Watch(func(e Event) {
		switch {
		case e.Kind == Opened:
			open = true
		case !open:
			t.Errorf("%s while closed", e.Kind)
		case e.Kind == Closed:
			open = false
		}
	})
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			for i := range 500 {
				var err error
				switch g {
				case 0:
					err = s.Open("p", int64(i), []byte("text"))
				case 1:
					err = s.Close("p")
				case 2:
					_, err = s.Edit("p", int64(1000+i), UTF16, []Edit{ed(0, 0, 0, 0, "x")}, -1)
				}
				if err != nil && !errors.Is(err, ErrNotOpen) {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if _, ok := s.Get("p"); ok != open {
		t.Errorf("Get finds the buffer: %v; events say open: %v", ok, open)
	}
}

func TestChildren(t *testing.T) {
	s := NewSet()
	for _, p := range []string{"a.txt", "new/dir/f.go", "new/g.go", "clean.txt"} {
		if err := s.Open(p, 1, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Save("clean.txt"); err != nil {
		t.Fatal(err)
	}
	got := s.Children("")
	if len(got) != 2 || got["a.txt"] || !got["new"] {
		t.Fatalf("root children %v", got)
	}
	got = s.Children("new")
	if len(got) != 2 || !got["dir"] || got["g.go"] {
		t.Fatalf("new/ children %v", got)
	}
	if got := s.Children("none"); len(got) != 0 {
		t.Fatalf("children of an empty dir %v", got)
	}
}
