package control

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"reflect"
	"runtime"
	"testing"

	"github.com/draftfs/draftfs/overlay"
)

// A status too large to go through jsonrpc2 as it is (over bigParams
// both ways) arrives whole and in order.
func TestStatusLargeResult(t *testing.T) {
	e := newEnv(t)
	d, err := e.ws.Draft("")
	must(t, err)
	f := d.Fs(overlay.SourceMCP)
	for i := range 1500 {
		fh, err := f.Create(fmt.Sprintf("dir%02d/file-with-a-long-name-%04d.txt", i%10, i))
		if err != nil {
			must(t, f.MkdirAll(fmt.Sprintf("dir%02d", i%10), 0o755))
			fh, err = f.Create(fmt.Sprintf("dir%02d/file-with-a-long-name-%04d.txt", i%10, i))
		}
		must(t, err)
		must(t, fh.Close())
	}
	want, err := d.Status()
	must(t, err)
	if b, _ := json.Marshal(want); len(b) < bigParams {
		t.Fatalf("the status is %d bytes: too small to test", len(b))
	}
	got, err := e.client(t).Status("")
	must(t, err)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the client got %d entries, not the %d of the draft's status", len(got), len(want))
	}
}

// largeAnswer serves conn: each request is answered with result.
func largeAnswer(conn net.Conn, result []byte, answered chan<- struct{}) {
	defer conn.Close()
	r := bufio.NewReaderSize(conn, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		id := idRE.FindSubmatch(line)
		fmt.Fprintf(conn, `{"id":%s,"result":%s,"jsonrpc":"2.0"}`+"\n", id[1], result)
		if answered != nil {
			answered <- struct{}{}
		}
	}
}

// A large result is decoded once: jsonrpc2 alone decodes it into Go
// values, copies it, and decodes it again. For 10,000 status entries
// (595 KiB, decoded into 1.8 MB of entries) that allocated 16.7 times
// the answer's size, 8.8 times when parked, 6.0 times since the parked
// result stays in the line's buffer and the slice is sized once.
func TestLargeResultAllocates(t *testing.T) {
	entries := make([]overlay.StatusEntry, 10000)
	for i := range entries {
		entries[i] = overlay.StatusEntry{Path: fmt.Sprintf("new%03d/n%03d.txt", i/100, i%100), Change: overlay.StatusAdded}
	}
	result, _ := json.Marshal(entries)
	a, b := net.Pipe()
	c := NewClient(a)
	defer c.Close()
	go largeAnswer(b, result, nil)
	var got []overlay.StatusEntry
	must(t, c.call(context.Background(), "draft/status", pathsParams{}, &got)) // warm up
	got = nil
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	must(t, c.call(context.Background(), "draft/status", pathsParams{}, &got))
	runtime.ReadMemStats(&after)
	if !reflect.DeepEqual(got, entries) {
		t.Fatalf("got %d entries, not the %d sent", len(got), len(entries))
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 7*uint64(len(result)) {
		t.Errorf("a %d KiB result allocated %d KiB, over 7 times its size", len(result)>>10, n>>10)
	}
	c.stream.smu.Lock()
	defer c.stream.smu.Unlock()
	if len(c.stream.awaited) != 0 {
		t.Errorf("%d results still parked after the call", len(c.stream.awaited))
	}
}

// A call given up before its large answer arrives leaves nothing parked.
func TestLargeResultAbandoned(t *testing.T) {
	result := []byte(`["` + fmt.Sprintf("%0*d", 2*bigParams, 0) + `"]`)
	a, b := net.Pipe()
	c := NewClient(a)
	defer c.Close()
	answered := make(chan struct{})
	slow, reply := net.Pipe()
	go func() { // holds the answer until the call is given up
		defer slow.Close()
		largeAnswer(reply, result, answered)
	}()
	go io.Copy(slow, b) // requests at once
	release := make(chan struct{})
	go func() { // answers once released
		<-release
		io.Copy(b, slow)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.call(ctx, "draft/status", pathsParams{}, new([]string)) }()
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled call returned no error")
	}
	close(release)
	<-answered
	// A second call's answer comes after the first's was read.
	var got []string
	must(t, c.call(context.Background(), "draft/status", pathsParams{}, &got))
	<-answered
	c.stream.smu.Lock()
	defer c.stream.smu.Unlock()
	if len(c.stream.awaited) != 0 {
		t.Errorf("%d results still parked: the abandoned call's answer was kept", len(c.stream.awaited))
	}
}
