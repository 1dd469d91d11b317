package acp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

func TestParseMessage(t *testing.T) {
	tests := []struct {
		line                        string
		ok, object                  bool
		request, notif, response    bool
		id, method, params, results string
	}{
		{line: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"a":[1,{"b":"}"}]}}`, ok: true, object: true, request: true, id: `1`, method: "initialize", params: `{"a":[1,{"b":"}"}]}`},
		{line: ` { "method" : "session/cancel" , "params" : { "sessionId" : "s\"1" } } `, ok: true, object: true, notif: true, method: "session/cancel", params: `{ "sessionId" : "s\"1" }`},
		{line: `{"id":"draftfs-1","result":{"content":"x\\"}}`, ok: true, object: true, response: true, id: `"draftfs-1"`, results: `{"content":"x\\"}`},
		{line: `{"id":null,"error":{"code":-32700,"message":"Parse error"}}`, ok: true, object: true, response: true, id: `null`},
		{line: `{"\u0069d":7,"met\u0068od":"x"}`, ok: true, object: true, request: true, id: `7`, method: "x"},
		{line: `{"id":1,"id":2,"method":"m"}`, ok: true, object: true, request: true, id: `2`, method: "m"},
		{line: `[1,2]`, ok: true},
		{line: `"str"`, ok: true},
		{line: `{"id":1,`, ok: false},
		{line: `not json`, ok: false},
	}
	for _, tt := range tests {
		m, ok := parseMessage([]byte(tt.line))
		if ok != tt.ok || m.object != tt.object {
			t.Errorf("%s: ok %v object %v, want %v %v", tt.line, ok, m.object, tt.ok, tt.object)
			continue
		}
		if m.isRequest() != tt.request || m.isNotification() != tt.notif || m.isResponse() != tt.response {
			t.Errorf("%s: request %v notification %v response %v", tt.line, m.isRequest(), m.isNotification(), m.isResponse())
		}
		if string(m.id) != tt.id || m.method != tt.method || (tt.params != "" && string(m.params) != tt.params) || (tt.results != "" && string(m.result) != tt.results) {
			t.Errorf("%s: id %s method %q params %s result %s", tt.line, m.id, m.method, m.params, m.result)
		}
	}
}

func TestSetMember(t *testing.T) {
	tests := []struct{ obj, key, val, want string }{
		{`{"a":1,"b":2}`, "a", `true`, `{"a":true,"b":2}`},
		{`{ "a" : 1 , "b" : {"x":[1,2]} }`, "b", `{}`, `{ "a" : 1 , "b" : {} }`},
		{`{"a":1}`, "fs", `{"readTextFile":true}`, `{"a":1,"fs":{"readTextFile":true}}`},
		{`{}`, "fs", `1`, `{"fs":1}`},
		{` { } `, "fs", `1`, ` { "fs":1} `},
		{`{"a":1,"a":2}`, "a", `3`, `{"a":3,"a":3}`},
		{`{"a\"b":1}`, `a"b`, `2`, `{"a\"b":2}`},
	}
	for _, tt := range tests {
		got := setMember([]byte(tt.obj), tt.key, []byte(tt.val))
		if string(got) != tt.want {
			t.Errorf("setMember(%s, %q, %s) = %s, want %s", tt.obj, tt.key, tt.val, got, tt.want)
		}
		if !json.Valid(got) {
			t.Errorf("setMember(%s) is not JSON: %s", tt.obj, got)
		}
	}
}

func TestElements(t *testing.T) {
	got := elements([]byte(` [ "a" , 1, {"x":[2]} ,"]"] `))
	want := [][]byte{[]byte(`"a"`), []byte(`1`), []byte(`{"x":[2]}`), []byte(`"]"`)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("elements = %q", got)
	}
	if elements([]byte(`null`)) != nil || len(elements([]byte(`[]`))) != 0 {
		t.Fatal("elements of null / []")
	}
}

func TestIDKey(t *testing.T) {
	same := [][]string{
		{`1`, `1.0`, `1e0`, ` 1 `},
		{`"1"`, `"\u0031"`},
		{`-5`, `-5.0`},
	}
	for _, group := range same {
		for _, id := range group {
			if idKey([]byte(id)) != idKey([]byte(group[0])) {
				t.Errorf("idKey(%s) = %q, idKey(%s) = %q", id, idKey([]byte(id)), group[0], idKey([]byte(group[0])))
			}
		}
	}
	if idKey([]byte(`1`)) == idKey([]byte(`"1"`)) {
		t.Error("number 1 and string \"1\" share a key")
	}
}

// FuzzEachMember checks the member splitter against encoding/json on any
// valid JSON object.
func FuzzEachMember(f *testing.F) {
	f.Add([]byte(`{"id":1,"method":"m","params":{"a":"\"}"}}`))
	f.Add([]byte(`{"a":[1,"]",{"b":null}],"c":"\\\\"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var want map[string]json.RawMessage
		if !utf8.Valid(b) || json.Unmarshal(b, &want) != nil || want == nil {
			return // encoding/json replaces invalid UTF-8 in keys; the proxy matches ASCII keys only
		}
		got := map[string]json.RawMessage{}
		eachMember(b, func(k, v []byte) { got[string(k)] = json.RawMessage(v) })
		if len(got) != len(want) {
			t.Fatalf("%s: members %v, want %v", b, got, want)
		}
		for k, w := range want {
			if !bytes.Equal(bytes.TrimSpace(got[k]), bytes.TrimSpace(w)) {
				t.Fatalf("%s: member %q = %s, want %s", b, k, got[k], w)
			}
		}
	})
}
