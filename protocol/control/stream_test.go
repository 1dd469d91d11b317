package control

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
)

// TestBadInput sends what a broken or hostile client might, each
// followed by a good request: every bad line gets the right error and
// the connection keeps working.
func TestBadInput(t *testing.T) {
	e := newEnv(t)
	r := e.raw(t)
	cases := []struct {
		name, line string
		code       int64
		id         string // the id the error must carry
		says       string // part of the message
	}{
		{"malformed", `{"jsonrpc":"2.0","id":1,"method":`, -32700, "null", "malformed JSON"},
		{"garbage", `hello`, -32700, "null", "malformed JSON"},
		{"not utf-8", "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"draft/status\",\"params\":{\"paths\":[\"\xff\"]}}", -32700, "null", "UTF-8"},
		{"batch", `[{"jsonrpc":"2.0","id":3,"method":"draft/status"}]`, -32600, "null", "batches"},
		{"scalar", `42`, -32600, "null", "JSON object"},
		{"no version", `{"id":4,"method":"draft/status"}`, -32600, "4", `"jsonrpc" must be "2.0"`},
		{"no method", `{"jsonrpc":"2.0","id":5}`, -32600, "5", `no "method"`},
		{"method not a string", `{"jsonrpc":"2.0","id":6,"method":7}`, -32600, "6", `"method" must be a string`},
		{"bad id", `{"jsonrpc":"2.0","id":-1,"method":"draft/status"}`, -32600, "null", `"id"`},
		{"float id", `{"jsonrpc":"2.0","id":1.5,"method":"draft/status"}`, -32600, "null", `"id"`},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"draft/status"}`, -32600, "null", `"id"`},
		{"params scalar", `{"jsonrpc":"2.0","id":8,"method":"draft/status","params":3}`, -32602, "8", "must be an object"},
		{"params array", `{"jsonrpc":"2.0","id":9,"method":"draft/status","params":[1]}`, -32602, "9", "must be an object"},
		{"unknown method", `{"jsonrpc":"2.0","id":10,"method":"draft/explode"}`, -32601, "10", `"draft/explode"`},
		{"missing params", `{"jsonrpc":"2.0","id":11,"method":"buffer/didOpen"}`, -32602, "11", "needs params"},
		{"missing member", `{"jsonrpc":"2.0","id":12,"method":"buffer/didOpen","params":{"path":"a","version":1}}`, -32602, "12", `"text" is missing`},
		{"null member", `{"jsonrpc":"2.0","id":40,"method":"buffer/didOpen","params":{"path":"a","version":1,"text":null}}`, -32602, "40", `"text" is missing`},
		{"wrong type", `{"jsonrpc":"2.0","id":13,"method":"buffer/didOpen","params":{"path":"a","version":"one","text":""}}`, -32602, "13", `"version" must be an integer`},
		{"fraction", `{"jsonrpc":"2.0","id":14,"method":"buffer/didOpen","params":{"path":"a","version":1.5,"text":""}}`, -32602, "14", `"version" must be an integer`},
		{"lone surrogate", `{"jsonrpc":"2.0","id":15,"method":"buffer/didOpen","params":{"path":"a","version":1,"text":"x\ud800y"}}`, -32602, "15", "surrogate"},
		{"low surrogate", `{"jsonrpc":"2.0","id":16,"method":"buffer/didOpen","params":{"path":"a","version":1,"text":"\udc00"}}`, -32602, "16", "surrogate"},
		{"outside", `{"jsonrpc":"2.0","id":17,"method":"draft/status","params":{"paths":["/etc/passwd"]}}`, -32602, "17", "not inside the workspace"},
		{"climbs out", `{"jsonrpc":"2.0","id":18,"method":"draft/read","params":{"path":"../x"}}`, -32602, "18", "climbs out"},
		{"string id", `{"jsonrpc":"2.0","id":"s","method":"draft/nothing"}`, -32601, `"s"`, "not a draftfs control method"},
		{"bad source", `{"jsonrpc":"2.0","id":19,"method":"fs/stat","params":{"source":"evil","path":""}}`, -32602, "19", `"source"`},
		{"not open", `{"jsonrpc":"2.0","id":20,"method":"buffer/didChange","params":{"path":"a","version":2,"text":"x"}}`, CodeNotFound, "20", "didOpen first"},
		{"discard nothing", `{"jsonrpc":"2.0","id":21,"method":"draft/discard","params":{}}`, -32602, "21", `"all": true`},
		{"discard unknown", `{"jsonrpc":"2.0","id":22,"method":"draft/discard","params":{"paths":["nope"]}}`, CodeRefused, "22", `no draft changes at "nope"`},
		{"undo nothing", `{"jsonrpc":"2.0","id":23,"method":"draft/undo"}`, CodeRefused, "23", "nothing to undo"},
		{"read missing", `{"jsonrpc":"2.0","id":24,"method":"draft/read","params":{"path":"missing"}}`, CodeNotFound, "24", "no such file"},
		{"bad mode", `{"jsonrpc":"2.0","id":25,"method":"fs/writeFile","params":{"source":"mcp","path":"m","data":"","mode":70000}}`, -32602, "25", "permission bits"},
		{"bad base64", `{"jsonrpc":"2.0","id":26,"method":"fs/writeFile","params":{"source":"mcp","path":"m","data":"!!"}}`, -32602, "26", "invalid params"},
		{"bad encoding", `{"jsonrpc":"2.0","id":27,"method":"initialize","params":{"positionEncodings":["utf-32"]}}`, -32602, "27", "utf-32"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r.t = t
			r.send(c.line)
			m := r.answer()
			if m.Error == nil {
				t.Fatalf("got result %s, want error %d", m.Result, c.code)
			}
			if m.Error.Code != c.code || string(m.ID) != c.id || !strings.Contains(m.Error.Message, c.says) {
				t.Errorf("got id %s error %d %q, want id %s error %d saying %q", m.ID, m.Error.Code, m.Error.Message, c.id, c.code, c.says)
			}
			r.send(`{"jsonrpc":"2.0","id":99,"method":"draft/status"}`)
			if m := r.answer(); m.Error != nil || string(m.Result) != "[]" {
				t.Fatalf("after the bad line, draft/status gave %s %+v", m.Result, m.Error)
			}
		})
	}
}

// TestUnknownNotification: notifications get no answer, known or not.
func TestUnknownNotification(t *testing.T) {
	e := newEnv(t)
	r := e.raw(t)
	r.send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"draft/log"}`)
	if m := r.answer(); string(m.ID) != "1" || m.Error != nil {
		t.Fatalf("got %+v", m)
	}
}

// TestOversized sends a message over MaxMessage: it is refused whole,
// and the next message on the connection works.
func TestOversized(t *testing.T) {
	e := newEnv(t)
	r := e.raw(t)
	big := `{"jsonrpc":"2.0","id":1,"method":"buffer/didOpen","params":{"path":"a","version":1,"text":"` +
		strings.Repeat("x", MaxMessage) + `"}}`
	go r.c.Write([]byte(big + "\n" + `{"jsonrpc":"2.0","id":2,"method":"buffer/list"}` + "\n"))
	m := r.answer()
	if m.Error == nil || m.Error.Code != -32600 || !strings.Contains(m.Error.Message, "64 MiB") || string(m.ID) != "1" {
		t.Fatalf("got id %s %+v, want -32600 over the limit for id 1", m.ID, m.Error)
	}
	m = r.answer()
	if string(m.ID) != "2" || m.Error != nil || string(m.Result) != "[]" {
		t.Fatalf("after the oversized message: %s %+v", m.Result, m.Error)
	}
}

// TestStreamLimit: a message of exactly the limit is read, one byte
// more is answered with -32600 and skipped.
func TestStreamLimit(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	st := newStream(a, 100, true)
	defer st.Close()
	msg := func(n int) string {
		head := `{"jsonrpc":"2.0","id":1,"method":"m","params":{"p":"`
		return head + strings.Repeat("x", n-len(head)-3) + `"}}`
	}
	go b.Write([]byte(msg(101) + "\n" + msg(100) + "\n"))
	got := make(chan error, 1)
	go func() {
		var v map[string]any
		err := st.ReadObject(&v)
		if err == nil && len(v["params"].(map[string]any)["p"].(string)) != 100-len(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"p":"`)-3 {
			err = fmt.Errorf("read %v", v)
		}
		got <- err
	}()
	line, err := bufio.NewReader(b).ReadString('\n')
	if err != nil || !strings.Contains(line, `"code":-32600`) || !strings.Contains(line, `"id":1`) || !strings.Contains(line, "100 bytes") {
		t.Fatalf("answer to the long message: %q %v", line, err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

func TestIDInHead(t *testing.T) {
	for in, want := range map[string]string{
		`{"id":7,"params":{"text":"xxxx`:                      "7",
		`{"jsonrpc":"2.0","id":"a b","method":"m","params":{`: `"a b"`,
		`{"params":{"text":"xxxxx`:                            "",
		`{"params":{"a":1},"id":3,"method":"m","x":"yyyy`:     "3",
		`{"id":null,"params":"`:                               "",
		`{"id":-4,"params":"`:                                 "",
		`[{"id":1}`:                                           "",
		`garbage`:                                             "",
	} {
		if got := string(idInHead([]byte(in))); got != want {
			t.Errorf("idInHead(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestLoneSurrogate(t *testing.T) {
	for in, want := range map[string]bool{
		`"\ud83d\ude00"`:    false, // a pair
		`"\ud83d"`:          true,
		`"\ude00"`:          true,
		`"\\ud800"`:         false, // an escaped backslash, then text
		`"\\\ud800"`:        true,
		`"\ud83d\u0041"`:    true,
		`"\u00e9\ud83d\u"`:  true,
		`"abc"`:             false,
		`"\ud83dx\ude00"`:   true,
		`"\n\ud83d\udfff"`:  false,
		`"\ud83d\ud83d"`:    true,
		`"\uD83D\uDE00ok"`:  false,
		`"\u12"`:            false, // not valid JSON anyway: no escape to judge
		`"ok\\"`:            false,
		`"\ud800\udc00\"x"`: false,
	} {
		if _, got := loneSurrogate([]byte(in)); got != want {
			t.Errorf("loneSurrogate(%s) = %v, want %v", in, got, want)
		}
	}
}

// BenchmarkDidOpen measures how fast the daemon takes a large buffer
// (8 MiB) through the whole path: framing, checks, jsonrpc2, the buffer.
func BenchmarkDidOpen(b *testing.B) {
	e := newEnv(b)
	c := e.client(b)
	text := strings.Repeat("0123456789abcdef\n", 8<<20/17)
	b.SetBytes(int64(len(text)))
	for i := 0; i < b.N; i++ {
		if err := c.OpenBuffer("big.txt", int64(i), text); err != nil {
			b.Fatal(err)
		}
	}
}
