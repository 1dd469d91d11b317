package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/draftfs/draftfs/protocol/internal/lines"
)

// referenceLines splits data as the ACP TypeScript SDK does: at "\n",
// dropping one "\r" before it, the last unterminated line included;
// lines over max become nil (skipped, to be answered as too long).
func referenceLines(data []byte, max int) [][]byte {
	var out [][]byte
	parts := bytes.Split(data, []byte("\n"))
	if len(parts[len(parts)-1]) == 0 {
		parts = parts[:len(parts)-1]
	}
	for _, p := range parts {
		p = bytes.TrimSuffix(p, []byte("\r"))
		if len(p) > max {
			p = nil
		} else if p == nil {
			p = []byte{}
		}
		out = append(out, p)
	}
	return out
}

func readAll(t testing.TB, r io.Reader, max int) [][]byte {
	lr := lines.NewReader(r, max)
	var out [][]byte
	for {
		line, err := lr.Next()
		switch {
		case errors.Is(err, lines.ErrTooLong):
			out = append(out, nil)
			continue
		case errors.Is(err, io.EOF):
			return out
		case err != nil:
			t.Fatalf("next: %v", err)
		}
		out = append(out, bytes.Clone(line))
	}
}

func equalLines(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if (a[i] == nil) != (b[i] == nil) || !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// FuzzLineFraming feeds the proxy's line reader arbitrary bytes, in
// pieces of arbitrary sizes, with a small limit so that long lines are
// common, and compares with the reference splitter.
func FuzzLineFraming(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n{\"b\":2}\r\n\n"), uint8(8))
	f.Add([]byte("no newline at the end"), uint8(3))
	f.Add([]byte("0123456789abcdef\nshort\n0123456789abcdefg\r\n"), uint8(16))
	f.Add([]byte("\r\n\r\r\n\n"), uint8(1))
	f.Add([]byte(strings.Repeat("x", 70000)+"\nok\n"), uint8(200))
	f.Fuzz(func(t *testing.T, data []byte, max uint8) {
		m := int(max%64) + 1
		want := referenceLines(data, m)
		got := readAll(t, iotest.OneByteReader(bytes.NewReader(data)), m)
		if !equalLines(got, want) {
			t.Fatalf("byte by byte, max %d: %q\nwant %q", m, got, want)
		}
		got = readAll(t, iotest.HalfReader(bytes.NewReader(data)), m)
		if !equalLines(got, want) {
			t.Fatalf("half reads, max %d: %q\nwant %q", m, got, want)
		}
	})
}

func TestLineReaderLarge(t *testing.T) {
	big := bytes.Repeat([]byte("a"), MaxMessage)
	over := bytes.Repeat([]byte("b"), MaxMessage+1)
	var in bytes.Buffer
	in.Write(big)
	in.WriteString("\r\n")
	in.Write(over)
	in.WriteString("\n{}\n")
	lines := readAll(t, &in, MaxMessage)
	if len(lines) != 3 || !bytes.Equal(lines[0], big) || lines[1] != nil || string(lines[2]) != "{}" {
		t.Fatalf("got %d lines (lengths %d %d %d)", len(lines), len(lines[0]), len(lines[1]), len(lines[2]))
	}
}

func TestLineWriterWholeLines(t *testing.T) {
	pr, pw := io.Pipe()
	w := newLineWriter(pw)
	var wg sync.WaitGroup
	const writers, each = 8, 50
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := bytes.Repeat([]byte{'a' + byte(i)}, 100000)
			for range each {
				w.write([]byte("{"), msg, []byte("}"))
			}
		}()
	}
	go func() { wg.Wait(); pw.Close() }()
	lines := readAll(t, pr, MaxMessage)
	if len(lines) != writers*each {
		t.Fatalf("%d lines, want %d", len(lines), writers*each)
	}
	for _, l := range lines {
		if len(l) != 100002 || bytes.Count(l, l[1:2]) != 100000 {
			t.Fatalf("interleaved line of %d bytes", len(l))
		}
	}
}

// FuzzProxyFromEditor feeds arbitrary bytes to the proxy as the editor's
// stream: each line that is JSON reaches the agent byte for byte
// (initialize: still JSON, with the fs capabilities), each line that is
// not is answered with one parse error, and nothing panics.
func FuzzProxyFromEditor(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"clientCapabilities\":{\"fs\":{\"readTextFile\":true}}}}\nnot json\r\n\n"))
	f.Add([]byte(`{"id":"x","method":"session/new","params":{"cwd":"/w","additionalDirectories":["/a",7]}}` + "\n" + `{"method":"initialize","params":{"clientCapabilities":[]}}`))
	f.Add([]byte(`{"id":{"a":1},"result":null}` + "\n[1,\n" + `{"method":"initialize","id":2,"params":{ "\u0063lientCapabilities" : { } }}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var toEditor, toAgent bytes.Buffer
		p := newProxy(&Options{}, &toEditor, &toAgent)
		p.readEditor(bytes.NewReader(data))

		var wantAgent [][]byte
		parseErrors := 0
		for _, l := range referenceLines(data, MaxMessage) {
			if len(bytes.TrimSpace(l)) == 0 {
				continue
			}
			if !json.Valid(l) {
				parseErrors++
				continue
			}
			wantAgent = append(wantAgent, l)
		}
		gotAgent := readAll(t, &toAgent, 2*MaxMessage)
		if len(gotAgent) != len(wantAgent) {
			t.Fatalf("the agent received %d lines, want %d: %q", len(gotAgent), len(wantAgent), gotAgent)
		}
		for i, want := range wantAgent {
			got := gotAgent[i]
			// A "\r" ending the line as sent ends it as forwarded too, where
			// the reader takes it for half of a CRLF.
			if bytes.Equal(got, bytes.TrimSuffix(want, []byte("\r"))) {
				continue
			}
			m, _ := parseMessage(want)
			if !m.isRequest() || m.method != MethodInitialize || !json.Valid(got) {
				t.Fatalf("sent %s, the agent received %s", want, got)
			}
			var init struct {
				Params struct {
					ClientCapabilities struct {
						FS struct{ ReadTextFile, WriteTextFile bool }
					}
				}
			}
			if err := json.Unmarshal(got, &init); err != nil || !init.Params.ClientCapabilities.FS.ReadTextFile || !init.Params.ClientCapabilities.FS.WriteTextFile {
				t.Fatalf("initialize %s reached the agent as %s (%v)", want, got, err)
			}
		}
		if n := bytes.Count(toEditor.Bytes(), []byte(`"code":-32700`)); n != parseErrors {
			t.Fatalf("%d parse errors answered, want %d", n, parseErrors)
		}
	})
}
