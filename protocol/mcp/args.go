package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/draftfs/draftfs/protocol/mcp/internal/reference"
)

// The reference server declares its inputs with zod and the TypeScript
// SDK validates them before a tool runs. Each tool here declares its
// inputs once, as props: they give the JSON Schema tools/list shows (the
// one zod produces) and check arguments with zod's messages, so a client
// that learned from the reference's errors reads the same ones.

// kind is the type of an input property.
type kind int

const (
	kString kind = iota
	kNumber
	kBool
	kStrings // an array of strings
	kEdits   // an array of {oldText, newText}
	kEnum    // a string from prop.enum
)

// prop is one input property of a tool.
type prop struct {
	name     string
	kind     kind
	required bool
	desc     string
	def      any      // default when absent (shown in the schema)
	minItems int      // arrays: the fewest items
	enum     []string // kEnum: the allowed values
}

const draft07 = "http://json-schema.org/draft-07/schema#"

// inputSchema is the JSON Schema of an object with props, as the
// reference's tools/list shows it.
func inputSchema(props []prop) map[string]any {
	properties := map[string]any{}
	var required []string
	for _, p := range props {
		properties[p.name] = p.schema()
		if p.required {
			required = append(required, p.name)
		}
	}
	s := map[string]any{"type": "object", "properties": properties, "$schema": draft07}
	if required != nil {
		s["required"] = required
	}
	return s
}

func (p prop) schema() map[string]any {
	s := map[string]any{}
	switch p.kind {
	case kString:
		s["type"] = "string"
	case kNumber:
		s["type"] = "number"
	case kBool:
		s["type"] = "boolean"
	case kEnum:
		s["type"] = "string"
		s["enum"] = p.enum
	case kStrings:
		s["type"] = "array"
		s["items"] = map[string]any{"type": "string"}
	case kEdits:
		s["type"] = "array"
		s["items"] = map[string]any{
			"type": "object",
			"properties": map[string]any{
				"oldText": map[string]any{"type": "string", "description": "Text to search for - must match exactly"},
				"newText": map[string]any{"type": "string", "description": "Text to replace with"},
			},
			"required": []string{"oldText", "newText"},
		}
	}
	if p.desc != "" {
		s["description"] = p.desc
	}
	if p.def != nil {
		s["default"] = p.def
	}
	if p.minItems > 0 {
		s["minItems"] = p.minItems
	}
	return s
}

// args are a tool's validated arguments, defaults filled in.
type args map[string]any

func (a args) str(name string) string {
	switch v := a[name].(type) {
	case string:
		return v
	case largeText:
		return string(v)
	}
	return ""
}

// text is a string argument as bytes: a large one as the transport took
// it out of the message, with no copy.
func (a args) text(name string) []byte {
	if t, ok := a[name].(largeText); ok {
		return t
	}
	return []byte(a.str(name))
}

func (a args) num(name string) float64 {
	f, _ := a[name].(float64)
	return f
}

func (a args) boolean(name string) bool {
	b, _ := a[name].(bool)
	return b
}

func (a args) strs(name string) []string {
	s, _ := a[name].([]string)
	return s
}

func (a args) edits() []reference.Edit {
	e, _ := a["edits"].([]reference.Edit)
	return e
}

// issue is one validation failure, as zod reports it.
type issue struct {
	msg  string
	path []any // property names and array indexes
}

func (i issue) String() string {
	if len(i.path) == 0 {
		return i.msg
	}
	var b strings.Builder
	for k, seg := range i.path {
		switch s := seg.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		default:
			if k > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, s)
		}
	}
	return i.msg + " at " + b.String()
}

// jsonType names a decoded JSON value's type as zod does.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	}
	return "object"
}

func expected(want string, v any, present bool, path ...any) issue {
	got := "undefined"
	if present {
		got = jsonType(v)
	}
	return issue{msg: "Invalid input: expected " + want + ", received " + got, path: path}
}

// parseArgs checks raw arguments against props. The error reads as the
// TypeScript SDK's: "MCP error -32602: Input validation error: Invalid
// arguments for tool NAME: ..." with one line per issue.
func parseArgs(tool string, props []prop, raw json.RawMessage) (args, error) {
	var v any = map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, errorf("MCP error -32602: Input validation error: Invalid arguments for tool %s: %v", tool, err)
		}
	}
	obj, ok := v.(map[string]any)
	var issues []issue
	if !ok {
		issues = append(issues, expected("object", v, true))
	}
	out := args{}
	for _, p := range props {
		if !ok {
			break
		}
		val, present := obj[p.name]
		if !present {
			if p.required {
				issues = append(issues, expected(typeName(p.kind), nil, false, p.name))
			} else if p.def != nil {
				out[p.name] = p.defaultValue()
			}
			continue
		}
		got, bad := p.check(val)
		issues = append(issues, bad...)
		if len(bad) == 0 {
			out[p.name] = got
		}
	}
	if len(issues) > 0 {
		msgs := make([]string, len(issues))
		for i, is := range issues {
			msgs[i] = is.String()
		}
		return nil, errorf("MCP error -32602: Input validation error: Invalid arguments for tool %s: %s", tool, strings.Join(msgs, "\n"))
	}
	return out, nil
}

func typeName(k kind) string {
	switch k {
	case kNumber:
		return "number"
	case kBool:
		return "boolean"
	case kStrings, kEdits:
		return "array"
	}
	return "string"
}

func (p prop) defaultValue() any {
	switch d := p.def.(type) {
	case []string:
		return append([]string(nil), d...)
	}
	return p.def
}

// check validates a present value and converts it to the Go type args
// holds: string, float64, bool, []string or []reference.Edit.
func (p prop) check(v any) (any, []issue) {
	switch p.kind {
	case kString:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case kNumber:
		if f, ok := v.(float64); ok {
			return f, nil
		}
	case kBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case kEnum:
		if s, ok := v.(string); ok {
			for _, e := range p.enum {
				if s == e {
					return s, nil
				}
			}
		}
		quoted := make([]string, len(p.enum))
		for i, e := range p.enum {
			quoted[i] = fmt.Sprintf("%q", e)
		}
		return nil, []issue{{msg: "Invalid option: expected one of " + strings.Join(quoted, "|"), path: []any{p.name}}}
	case kStrings, kEdits:
		list, ok := v.([]any)
		if !ok {
			break
		}
		var issues []issue
		if len(list) < p.minItems {
			issues = append(issues, issue{msg: fmt.Sprintf("Too small: expected array to have >=%d items", p.minItems), path: []any{p.name}})
		}
		if p.kind == kStrings {
			out := make([]string, 0, len(list))
			for i, e := range list {
				s, ok := e.(string)
				if !ok {
					issues = append(issues, expected("string", e, true, p.name, i))
				}
				out = append(out, s)
			}
			return out, issues
		}
		out := make([]reference.Edit, 0, len(list))
		for i, e := range list {
			m, ok := e.(map[string]any)
			if !ok {
				issues = append(issues, expected("object", e, true, p.name, i))
				continue
			}
			var ed reference.Edit
			for _, f := range []struct {
				name string
				dst  *string
			}{{"oldText", &ed.OldText}, {"newText", &ed.NewText}} {
				fv, present := m[f.name]
				s, ok := fv.(string)
				if !ok {
					issues = append(issues, expected("string", fv, present, p.name, i, f.name))
				}
				*f.dst = s
			}
			out = append(out, ed)
		}
		return out, issues
	}
	return nil, []issue{expected(typeName(p.kind), v, true, p.name)}
}
