package acp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// The cases of Zed's own tests (crates/acp_thread, test_reading_from_line
// and test_reading_empty_file), plus CRLF and a missing final newline.
func TestSliceLines(t *testing.T) {
	const four = "one\ntwo\nthree\nfour\n"
	tests := []struct {
		text        string
		line, limit int64
		want        string
		wantErr     string // Zed's data text
	}{
		{four, 0, -1, four, ""},
		{four, 1, -1, four, ""},
		{four, 3, -1, "three\nfour\n", ""},
		{four, 0, 2, "one\ntwo\n", ""},
		{four, 2, 2, "two\nthree\n", ""},
		{four, 4, 1, "four\n", ""},
		{four, 5, -1, "", ""},
		{four, 5, 3, "", ""},
		{four, 6, 2, "", "Attempting to read beyond the end of the file, line 5:0"},
		{four, 2, 0, "", ""},
		{four, 1, 100, four, ""},
		{"", 0, -1, "", ""},
		{"", 1, -1, "", ""},
		{"", 0, 2, "", ""},
		{"", 1, 1, "", ""},
		{"", 5, 2, "", "Attempting to read beyond the end of the file, line 1:0"},
		{"a\r\nb\r\nc", 2, 1, "b\r\n", ""},
		{"a\r\nb\r\nc", 3, -1, "c", ""},
		{"a\r\nb\r\nc", 4, -1, "", "Attempting to read beyond the end of the file, line 3:1"},
		{"a\rb\n", 1, 1, "a\rb\n", ""}, // a lone CR does not end a line
		{"x\nlast line", 9, -1, "", "Attempting to read beyond the end of the file, line 2:9"},
	}
	for _, tt := range tests {
		got, err := sliceLines([]byte(tt.text), tt.line, tt.limit)
		if tt.wantErr != "" {
			var be *beyondEndError
			if !errors.As(err, &be) || be.zedData() != tt.wantErr {
				t.Errorf("sliceLines(%q, %d, %d) error = %v, want %q", tt.text, tt.line, tt.limit, err, tt.wantErr)
			}
			if be != nil && !strings.Contains(be.Error(), "line "+itoa(tt.line)) {
				t.Errorf("error %q does not name the line asked", be.Error())
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("sliceLines(%q, %d, %d) = %q, %v; want %q", tt.text, tt.line, tt.limit, got, err, tt.want)
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestCheckText(t *testing.T) {
	if err := checkText("a", []byte("héllo\r\n\tworld €𝄞")); err != nil {
		t.Fatalf("valid text refused: %v", err)
	}
	err := checkText("bin", []byte("PNG\x00\x01"))
	if err == nil || !strings.Contains(err.Error(), "binary") || !strings.Contains(err.Error(), "offset 3") {
		t.Fatalf("binary: %v", err)
	}
	err = checkText("latin1", []byte("caf\xe9\n"))
	if err == nil || !strings.Contains(err.Error(), "not valid UTF-8") || !strings.Contains(err.Error(), "offset 3") {
		t.Fatalf("latin-1: %v", err)
	}
}

func TestAppendJSONString(t *testing.T) {
	var all []byte
	for c := 0; c < 0x80; c++ {
		all = append(all, byte(c))
	}
	inputs := []string{"", "plain", `quote " and \ back`, "ctl \x00\x01\x1f\x7f", "\n\r\t\b\f", "€ 𝄞 \u2028\u2029 <>&", string(all)}
	for _, in := range inputs {
		enc := appendJSONString(nil, []byte(in))
		var back string
		if err := json.Unmarshal(enc, &back); err != nil || back != in {
			t.Errorf("%q encodes to %s, which decodes to %q (%v)", in, enc, back, err)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	f.Add([]byte("a\"b\\c\n\x00é"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !utf8.Valid(b) {
			return
		}
		enc := appendJSONString(nil, b)
		var back string
		if err := json.Unmarshal(enc, &back); err != nil || back != string(b) {
			t.Fatalf("%q: encoded %s, decoded %q, %v", b, enc, back, err)
		}
	})
}
