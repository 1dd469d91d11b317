package control

import (
	"bufio"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

// The fuzz targets' seeds run in every `go test`; fuzz them with
//
//	go test -fuzz FuzzInput ./protocol/control
//	go test -fuzz FuzzParams ./protocol/control

// probe is a good request sent after the fuzzed input: the connection
// must still answer it.
const probe = `{"jsonrpc":"2.0","id":"probe","method":"buffer/list"}`

// FuzzInput writes arbitrary bytes to a connection, then a good request:
// every line the daemon answers must be a JSON-RPC 2.0 message, the
// daemon must not panic, and the connection must answer the request.
func FuzzInput(f *testing.F) {
	for _, seed := range []string{
		``,
		`{`,
		"\xff\xfe",
		`[]`,
		`[{"jsonrpc":"2.0","id":1,"method":"draft/status"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"draft/status","params":{"paths":["a"]}}`,
		`{"jsonrpc":"2.0","method":"buffer/didOpen","params":{"path":"f","version":1,"text":"x\ud800"}}`,
		`{"jsonrpc":"2.0","id":18446744073709551615,"method":"draft/log"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"positionEncodings":["utf-8"]}}` + "\n" +
			`{"jsonrpc":"2.0","id":2,"method":"buffer/didOpen","params":{"path":"f","version":1,"text":"a\nb"}}` + "\n" +
			`{"jsonrpc":"2.0","id":3,"method":"buffer/didChange","params":{"path":"f","version":2,"changes":[{"range":{"start":{"line":1,"character":0},"end":{"line":9,"character":9}},"text":"é"}],"length":4}}`,
		`{"jsonrpc":"2.0","id":1,"method":"fs/writeFile","params":{"source":"mcp","path":"d/x","data":"aGk="}}` + "\n" +
			`{"jsonrpc":"2.0","id":2,"method":"draft/commit","params":{"progress":true}}` + "\n" +
			`{"jsonrpc":"2.0","id":3,"method":"draft/undo"}`,
		`{"jsonrpc":"2.0","id":1,"method":"draft/discard","params":{"all":true,"paths":"x"}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"draft/read\",\"params\":{\"path\":\"\\u0000\"}}\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	e := newEnv(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		exchange(t, e, string(data))
	})
}

// methodNames lists the methods FuzzParams calls, by index.
func methodNames() []string {
	names := make([]string, 0, len(methods))
	for m := range methods {
		names = append(names, m)
	}
	slices.Sort(names) // a seed names the same method in every run
	return names
}

// FuzzParams calls each method with arbitrary params, as a request and
// as a notification.
func FuzzParams(f *testing.F) {
	names := methodNames()
	for _, seed := range []struct {
		method string
		params string
	}{
		{"initialize", `{"clientInfo":{"name":"x"},"positionEncodings":["utf-16","utf-8"]}`},
		{"buffer/didOpen", `{"path":"a.txt","version":1,"text":"one\r\ntwo"}`},
		{"buffer/didChange", `{"path":"a.txt","version":3,"changes":[{"range":{"start":{"line":0,"character":1},"end":{"line":1,"character":2}},"text":"😀"}],"length":-1}`},
		{"buffer/didChange", `{"path":"a.txt","version":4,"text":"full","changes":[]}`},
		{"buffer/didChange", `{"path":"a.txt","version":5,"changes":[{"text":"whole"}]}`},
		{"buffer/didSave", `{"path":"a.txt"}`},
		{"buffer/didClose", `{"path":"/"}`},
		{"draft/status", `{"paths":["", ".", "..", "/"]}`},
		{"draft/diff", `{"paths":null}`},
		{"draft/read", `{"path":"a.txt","draft":"other"}`},
		{"draft/commit", `{"dryRun":true,"force":true,"paths":["a.txt"]}`},
		{"draft/discard", `{"paths":["a.txt"],"source":"mcp"}`},
		{"draft/undo", `{"source":"editor"}`},
		{"draft/log", `{"draft":"../x"}`},
		{"fs/writeFile", `{"source":"acp","path":"n/e/w","data":"","mode":493}`},
		{"fs/rename", `{"source":"acp","from":"n","to":"m"}`},
		{"fs/readFile", `{"source":"mcp","path":"m/e/w","limit":1}`},
		{"fs/readDir", `{"source":"mcp","path":""}`},
		{"fs/removeAll", `{"source":"mcp","path":"m"}`},
		{"fs/discard", `{"source":"mcp","all":true}`},
		{"fs/resolve", `{"source":"mcp","path":"/tmp"}`},
		{"fs/stat", `[]`},
		{"draft/mount", `{}`},
	} {
		idx := -1
		for i, m := range names {
			if m == seed.method {
				idx = i
			}
		}
		if idx < 0 {
			f.Fatalf("seed for unknown method %s", seed.method)
		}
		f.Add(uint8(idx), seed.params, false)
	}
	e := newEnv(f)
	f.Fuzz(func(t *testing.T, idx uint8, params string, notify bool) {
		if !json.Valid([]byte(params)) {
			params = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(params) + `"`
		}
		msg := map[string]any{"jsonrpc": "2.0", "method": names[int(idx)%len(names)], "params": json.RawMessage(params)}
		if !notify {
			msg["id"] = 1
		}
		line, err := json.Marshal(msg)
		if err != nil {
			return // params that are not JSON after all
		}
		exchange(t, e, string(line))
	})
}

// exchange sends input and the probe on a new connection and checks
// every answer until the probe's.
func exchange(t *testing.T, e *env, input string) {
	a, b := net.Pipe()
	e.srv.ServeConn(a)
	defer b.Close()
	go func() {
		b.SetWriteDeadline(time.Now().Add(20 * time.Second))
		b.Write([]byte(input + "\n" + probe + "\n"))
	}()
	b.SetReadDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReaderSize(b, 1<<16)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("the connection failed before answering the probe: %v", err)
		}
		var m struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Error   *struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != "2.0" {
			t.Fatalf("answer %q is not JSON-RPC 2.0: %v", line, err)
		}
		if m.Error != nil && (m.Error.Message == "" || m.Error.Code == 0) {
			t.Fatalf("error without code or message: %s", line)
		}
		if string(m.ID) == `"probe"` {
			if m.Error != nil {
				t.Fatalf("the probe failed: %s", line)
			}
			break
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, l := range e.logs {
		if strings.Contains(l, "panic") {
			t.Fatalf("the server panicked: %v", e.logs)
		}
	}
}
