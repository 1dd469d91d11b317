package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// answer is one step's answer, as the client returned it.
type answer struct {
	Content           []map[string]any `json:"content"`
	StructuredContent any              `json:"structuredContent"`
	IsError           bool             `json:"isError"`
	Error             string           `json:"error"`
	Tools             []map[string]any `json:"tools"`
	URIs              []string         `json:"uris"`
	Contents          []map[string]any `json:"contents"`
}

// text is the answer's first text block.
func (a answer) text() string {
	if len(a.Content) == 0 {
		return ""
	}
	s, _ := a.Content[0]["text"].(string)
	return s
}

// check compares the reference's answer with draftfs's.
type check func(t *testing.T, ref, got answer)

// same: the same text, error flag and structured text.
func same(t *testing.T, ref, got answer) {
	t.Helper()
	if got.IsError != ref.IsError || got.text() != ref.text() || got.Error != ref.Error {
		t.Errorf("answers differ\nreference: error=%v %q %s\ndraftfs:   error=%v %q %s", ref.IsError, ref.text(), ref.Error, got.IsError, got.text(), got.Error)
		return
	}
	if len(got.Content) != len(ref.Content) {
		t.Errorf("%d content blocks, the reference %d", len(got.Content), len(ref.Content))
	}
	if !ref.IsError {
		r, _ := ref.StructuredContent.(map[string]any)
		g, _ := got.StructuredContent.(map[string]any)
		if !reflect.DeepEqual(r["content"], g["content"]) {
			t.Errorf("structured content %v, the reference %v", g["content"], r["content"])
		}
	}
}

// sameLines: the same lines in any order (draftfs lists by name, the
// reference in the order the disk returns).
func sameLines(t *testing.T, ref, got answer) {
	t.Helper()
	sorted := func(a answer) answer {
		lines := strings.Split(a.text(), "\n")
		sort.Strings(lines)
		a.Content = []map[string]any{{"type": "text", "text": strings.Join(lines, "\n")}}
		a.StructuredContent = nil
		return a
	}
	same(t, sorted(ref), sorted(got))
}

// sameTree: the same directory_tree JSON, children in any order.
func sameTree(t *testing.T, ref, got answer) {
	t.Helper()
	if ref.IsError || got.IsError {
		same(t, ref, got)
		return
	}
	var r, g any
	if err := json.Unmarshal([]byte(ref.text()), &r); err != nil {
		t.Fatalf("reference tree: %v", err)
	}
	if err := json.Unmarshal([]byte(got.text()), &g); err != nil {
		t.Fatalf("draftfs tree: %v", err)
	}
	sortTree(r)
	sortTree(g)
	if !reflect.DeepEqual(r, g) {
		t.Errorf("trees differ\nreference: %v\ndraftfs:   %v", r, g)
	}
	// Formatting too: JSON.stringify(tree, null, 2).
	if rb, _ := json.MarshalIndent(g, "", "  "); len(rb) != len(got.text()) {
		t.Errorf("tree text is not 2-space indented JSON: %q", got.text())
	}
}

func sortTree(v any) {
	list, ok := v.([]any)
	if !ok {
		return
	}
	sort.Slice(list, func(i, j int) bool {
		return list[i].(map[string]any)["name"].(string) < list[j].(map[string]any)["name"].(string)
	})
	for _, e := range list {
		sortTree(e.(map[string]any)["children"])
	}
}

// sameWhole: every block and the whole structured content equal.
func sameWhole(t *testing.T, ref, got answer) {
	t.Helper()
	if !reflect.DeepEqual(ref.Content, got.Content) || !reflect.DeepEqual(ref.StructuredContent, got.StructuredContent) || ref.IsError != got.IsError {
		t.Errorf("answers differ\nreference: %+v\ndraftfs:   %+v", ref, got)
	}
}

// samePrefix: both errors, starting alike (the rest names things that
// differ by nature: a temporary file's random name, a symlink's target).
func samePrefix(prefix string) check {
	return func(t *testing.T, ref, got answer) {
		t.Helper()
		if !ref.IsError || !got.IsError || !strings.HasPrefix(ref.text(), prefix) || !strings.HasPrefix(got.text(), prefix) {
			t.Errorf("want errors starting %q\nreference: error=%v %q\ndraftfs:   error=%v %q", prefix, ref.IsError, ref.text(), got.IsError, got.text())
		}
	}
}

// sameInfo: get_file_info alike, but for the creation and access times
// (the copies were made at different times; the view keeps one time per
// file) and draftfs's extra sha256 line, which must be the file's.
func sameInfo(content string) check { return infoCheck(content, timeLine) }

// sameInfoWritten: sameInfo for a file both servers wrote, at their own
// times.
func sameInfoWritten(content string) check { return infoCheck(content, anyTimeLine) }

func infoCheck(content string, timeLine *regexp.Regexp) check {
	return func(t *testing.T, ref, got answer) {
		t.Helper()
		for _, a := range []answer{ref, got} {
			if n := len(timeLine.FindAllString(a.text(), -1)); n < 2 {
				t.Errorf("no times in %q", a.text())
			}
		}
		g := timeLine.ReplaceAllString(got.text(), "$1: T")
		r := timeLine.ReplaceAllString(ref.text(), "$1: T")
		if content != "" {
			sum := sha256.Sum256([]byte(content))
			want := "\nsha256: " + hex.EncodeToString(sum[:])
			if !strings.HasSuffix(g, want) {
				t.Errorf("draftfs's info does not end with %q: %q", want, g)
			}
			g = strings.TrimSuffix(g, want)
		}
		if g != r || got.IsError != ref.IsError {
			t.Errorf("file info differs\nreference: %q\ndraftfs:   %q", r, g)
		}
	}
}

// differs: draftfs answers as want says, where it differs on purpose.
func differs(why string, want func(t *testing.T, ref, got answer)) check {
	return func(t *testing.T, ref, got answer) {
		t.Helper()
		t.Logf("intended difference: %s", why)
		want(t, ref, got)
	}
}

// sizeOrder: the same lines, draftfs's sorted by size, largest first
// (entries of one size come in name order here, in disk order there).
func sizeOrder(t *testing.T, ref, got answer) {
	t.Helper()
	sameLines(t, ref, got)
	sizes := regexp.MustCompile(`(?m)^\[(?:FILE|DIR)\] .{30} +(.*)$`)
	var order []string
	for _, m := range sizes.FindAllStringSubmatch(got.text(), -1) {
		order = append(order, m[1])
	}
	var refOrder []string
	for _, m := range sizes.FindAllStringSubmatch(ref.text(), -1) {
		refOrder = append(refOrder, m[1])
	}
	if !slices.Equal(order, refOrder) {
		t.Errorf("sizes in order %q, the reference %q", order, refOrder)
	}
}

// draftfsTools are the tools draftfs adds to the reference's.
var draftfsTools = []string{"append_file", "copy_file", "delete_file", "draft_diff", "draft_status", "restore_file", "search_content"}

// compareTools: the reference's tools with the same names, titles,
// descriptions, input schemas and annotations (absent hints read as their
// defaults), output schemas that accept what the reference's do, and
// draftfs's own tools besides.
func compareTools(t *testing.T, ref, got answer) {
	t.Helper()
	mine := map[string]map[string]any{}
	for _, tl := range got.Tools {
		mine[tl["name"].(string)] = tl
	}
	for _, r := range ref.Tools {
		name := r["name"].(string)
		g := mine[name]
		if g == nil {
			t.Errorf("tool %s missing", name)
			continue
		}
		delete(mine, name)
		for _, k := range []string{"title", "description", "inputSchema"} {
			if !reflect.DeepEqual(r[k], g[k]) {
				t.Errorf("%s %s:\nreference %v\ndraftfs   %v", name, k, r[k], g[k])
			}
		}
		if ra, ga := hints(r["annotations"]), hints(g["annotations"]); !reflect.DeepEqual(ra, ga) {
			t.Errorf("%s annotations: reference %v, draftfs %v", name, ra, ga)
		}
		ro, go_ := r["outputSchema"].(map[string]any), g["outputSchema"].(map[string]any)
		rp, gp := ro["properties"].(map[string]any), go_["properties"].(map[string]any)
		for k, v := range rp {
			if !reflect.DeepEqual(v, gp[k]) {
				t.Errorf("%s output property %s: reference %v, draftfs %v", name, k, v, gp[k])
			}
		}
		if !reflect.DeepEqual(ro["required"], go_["required"]) {
			t.Errorf("%s output required: reference %v, draftfs %v", name, ro["required"], go_["required"])
		}
	}
	var extra []string
	for name := range mine {
		extra = append(extra, name)
	}
	sort.Strings(extra)
	if !slices.Equal(extra, draftfsTools) {
		t.Errorf("draftfs's own tools %v, want %v", extra, draftfsTools)
	}
}

// hints are a tool's annotations with the defaults the spec gives absent
// ones (the Go SDK writes readOnlyHint and idempotentHint always).
func hints(v any) map[string]any {
	out := map[string]any{"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true}
	m, _ := v.(map[string]any)
	for k, x := range m {
		out[k] = x
	}
	if out["readOnlyHint"] == true {
		// Meaningless for read-only tools.
		delete(out, "destructiveHint")
		delete(out, "idempotentHint")
	}
	return out
}

var (
	timeLine    = regexp.MustCompile(`(?m)^(created|accessed): .*$`)
	anyTimeLine = regexp.MustCompile(`(?m)^(created|accessed|modified): .*$`)
)
