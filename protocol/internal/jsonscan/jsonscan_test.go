package jsonscan

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// members lists what Next, Span and Enter read, entering objects under
// the keys in enter.
func members(o *Object, b []byte, enter ...string) string {
	var out []string
	for o.Next() {
		if slices.Contains(enter, o.Key()) {
			if c := o.Enter(); c != nil {
				out = append(out, o.Key()+"{"+members(c, b, enter...)+"}")
				continue
			}
		}
		start, end, ok := o.Span()
		if !ok {
			out = append(out, o.Key()+"=?")
			continue
		}
		out = append(out, fmt.Sprintf("%s=%s", o.Key(), b[start:end]))
	}
	return strings.Join(out, " ")
}

func TestObject(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":1,"b":{"c":[1,{"d":2}]},"e":null,"f":"x\"}"}`, `a=1 b={"c":[1,{"d":2}]} e=null f="x\"}"`},
		{` { "a" : [ ] , "b" : { } } `, `a=[ ] b={ }`},
		{`{"p":{"q":{"r":"s"},"t":1},"u":2}`, `p{q{r="s"} t=1} u=2`},
		{`{"p":{"q":{"r":"s","v":3},"t":1},"u":2}`, `p{q{r="s" v=3} t=1} u=2`},
		// cut short: the members held whole are read
		{`{"a":1,"b":{"c":[1,2`, `a=1 b=?`},
		{`{"a":"xy`, ``},
		{`{"p":{"q":1,"r":[`, `p{q=1 r=?}`},
		{`[1,2]`, ``},
		{`"a"`, ``},
		{``, ``},
	} {
		b := []byte(c.in)
		if got := members(Open(b), b, "p", "q"); got != c.want {
			t.Errorf("%s: got %s, want %s", c.in, got, c.want)
		}
	}
}

// TestEnterPartly: members an entered object leaves unread are read
// through by its parent's Next.
func TestEnterPartly(t *testing.T) {
	b := []byte(`{"p":{"a":{"x":[1]},"b":2},"c":3}`)
	o := Open(b)
	if !o.Next() || o.Key() != "p" {
		t.Fatal("no p")
	}
	p := o.Enter()
	if !p.Next() || p.Key() != "a" {
		t.Fatal("no p.a")
	}
	if _, _, ok := o.Span(); ok {
		t.Error("an entered value has a span")
	}
	if !o.Next() || o.Key() != "c" || string(o.Raw()) != "3" {
		t.Fatalf("after p: %q %q", o.Key(), o.Raw())
	}
	if o.Next() || o.Finish() != nil {
		t.Errorf("after c: %v", o.Err())
	}
}

func TestFind(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{`{"jsonrpc":"2.0","id":7,"params":{"id":1}}`, `7`, true},
		{`{"params":{"id":1},"id":"x"}`, `"x"`, true},
		{`{"params":{"id":1`, ``, false},
		{`{"id":{"a":1},"b":2}`, `{"a":1}`, true},
		{`{"id":"ab`, ``, false},
		{`{"a":1}`, ``, false},
	} {
		got, ok := Find([]byte(c.in), "id")
		if string(got) != c.want || ok != c.ok {
			t.Errorf("%s: got %s %v, want %s %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestFinishErr(t *testing.T) {
	o := Open([]byte(`{"a":1} }`))
	for o.Next() {
	}
	if o.Finish() == nil {
		t.Error("trailing } read as JSON")
	}
}

func TestLen(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{`[]`, 0},
		{` [ ] `, 0},
		{`[1]`, 1},
		{`[[]]`, 1},
		{`[{}]`, 1},
		{`["a,b",{"x":[1,2,3],"y":"]}"},[4,5]]`, 3},
		{`["\"", "\\", "\\\",,"]`, 3},
		{"[\n  {\"a\": 1},\n  {\"a\": 2}\n]", 2},
		{`{"a":[1,2]}`, 0},
		{`null`, 0},
		{`"[1,2]"`, 0},
		{``, 0},
		{`[1,2`, 0},
	} {
		if got := Len([]byte(c.in)); got != c.want {
			t.Errorf("Len(%s) = %d, want %d", c.in, got, c.want)
		}
	}
}

// TestLenAgreesWithDecoding checks Len against what decoding gives for
// arrays of every shape the status and diff answers take.
func TestLenAgreesWithDecoding(t *testing.T) {
	var v []any
	for i := range 300 {
		switch i % 5 {
		case 0:
			v = append(v, map[string]any{"path": fmt.Sprintf("d/%d,\"x\\", i), "list": []any{1, "]", nil}})
		case 1:
			v = append(v, "[,{")
		case 2:
			v = append(v, []any{})
		case 3:
			v = append(v, nil)
		default:
			v = append(v, float64(i))
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := Len(b); got != len(v) {
			t.Fatalf("Len of %d values: %d (%s)", len(v), got, b)
		}
	}
}
