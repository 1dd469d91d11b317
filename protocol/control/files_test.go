package control

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"regexp"
	"runtime"
	"testing"

	"github.com/draftfs/draftfs/overlay"
)

// A large write reaches the daemon intact, and the two ends together
// allocate a few times its size: the daemon reads the params where they
// are in the line (stream.park), where jsonrpc2 would decode them into
// Go values and marshal them again (23 times the size in all).
func TestWriteFileLarge(t *testing.T) {
	e := newEnv(t)
	f, err := NewFiles(e.client(t), "", overlay.SourceMCP)
	must(t, err)
	data := make([]byte, 3<<20+1)
	for i := range data {
		data[i] = byte(i * 7)
	}
	writeAllocates(t, f, data, 10)
	got, err := f.ReadFile("big.bin", -1)
	must(t, err)
	if !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, not the %d written", len(got), len(data))
	}
}

// A write costs its base64 text once: not the copies encoding/json and
// jsonrpc2 make of params marshalled inside a request inside a message.
func TestWriteFileCopies(t *testing.T) {
	a, b := net.Pipe()
	c := NewClient(a)
	defer c.Close()
	go fakeDaemon(b)
	f, err := NewFiles(c, "", overlay.SourceMCP)
	must(t, err)
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<19) // 8 MiB
	writeAllocates(t, f, data, 2)
}

// writeAllocates writes data as big.bin and fails t if that allocated
// more than most times its size.
func writeAllocates(t *testing.T, f *Files, data []byte, most uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	must(t, f.WriteFile("big.bin", data, 0o644))
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > most*uint64(len(data)) {
		t.Errorf("writing %d MiB allocated %d MiB, over %d times its size", len(data)>>20, n>>20, most)
	}
}

var (
	idRE     = regexp.MustCompile(`"id":(\d+)`)
	methodRE = regexp.MustCompile(`"method":"([^"]+)"`)
)

// fakeDaemon answers each request on conn from its first and last bytes,
// reading the rest without keeping it.
func fakeDaemon(conn net.Conn) {
	defer conn.Close()
	r := bufio.NewReaderSize(conn, 64<<10)
	for {
		var head, tail []byte
		for {
			chunk, err := r.ReadSlice('\n')
			if len(head) < 256 {
				head = append(head, chunk[:min(len(chunk), 256-len(head))]...)
			}
			tail = append(tail[:0], chunk[max(0, len(chunk)-256):]...)
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil {
				return
			}
			break
		}
		ends := append(head, tail...)
		id, method := idRE.FindSubmatch(ends), methodRE.FindSubmatch(ends)
		if id == nil || method == nil {
			return
		}
		result := "null"
		if string(method[1]) == "initialize" {
			result = `{"workspace":"/w","draft":"main"}`
		}
		fmt.Fprintf(conn, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id[1], result)
	}
}
