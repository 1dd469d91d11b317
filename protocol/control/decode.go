package control

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/draftfs/draftfs/buffers"
	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/protocol/internal/jsonscan"
)

func (p draftParams) ref() (string, string)     { return p.Draft, "" }
func (p gcParams) ref() (string, string)        { return p.Draft, "" }
func (p sourceParams) ref() (string, string)    { return p.Draft, p.Source }
func (p pathsParams) ref() (string, string)     { return p.Draft, "" }
func (p readParams) ref() (string, string)      { return p.Draft, "" }
func (p commitParams) ref() (string, string)    { return p.Draft, p.Source }
func (p discardParams) ref() (string, string)   { return p.Draft, p.Source }
func (p fsParams) ref() (string, string)        { return p.Draft, p.Source }
func (p fsRenameParams) ref() (string, string)  { return p.Draft, p.Source }
func (p fsDiscardParams) ref() (string, string) { return p.Draft, p.Source }

func (p commitParams) check() error {
	if len(p.Hunks) > 0 && len(p.Paths) > 0 {
		return invalidParams(`draft/commit: give "paths" or "hunks", not both`)
	}
	return nil
}

func (p discardParams) check() error {
	given := 0
	for _, g := range []bool{p.All, len(p.Paths) > 0, len(p.Hunks) > 0} {
		if g {
			given++
		}
	}
	if given != 1 {
		return invalidParams(`draft/discard: give one of "paths", "hunks" or "all": true`)
	}
	return nil
}

func (p bufferParams) bufferPath() string    { return p.Path }
func (p didOpenParams) bufferPath() string   { return p.Path }
func (p didChangeParams) bufferPath() string { return p.Path }

func (p didChangeParams) check() error {
	switch {
	case p.Text != nil && p.Changes != nil:
		return invalidParams(`buffer/didChange: give "text" or "changes", not both`)
	case p.Text == nil && p.Changes == nil:
		return invalidParams(`buffer/didChange: give "text" (the full text) or "changes" (ranges)`)
	case p.Length != nil && *p.Length < 0:
		return invalidParams(`buffer/didChange: "length" must not be negative`)
	}
	return nil
}

func (p fsWriteParams) check() error {
	if p.Mode&^0o7777 != 0 {
		return invalidParams(`fs/writeFile: "mode" takes permission bits only (at most 0o7777), not %#o`, p.Mode)
	}
	return nil
}

// positionEncoding turns a negotiated name into an encoding.
func positionEncoding(name string) (buffers.Encoding, bool) {
	switch name {
	case "utf-8":
		return buffers.UTF8, true
	case "utf-16":
		return buffers.UTF16, true
	}
	return 0, false
}

// sourceOf checks a front end's name for the log.
func sourceOf(name string, dflt overlay.Source) (overlay.Source, error) {
	switch overlay.Source(name) {
	case "":
		if dflt != "" {
			return dflt, nil
		}
	case overlay.SourceACP, overlay.SourceMCP, overlay.SourceCLI, overlay.SourceEditor:
		return overlay.Source(name), nil
	}
	return "", invalidParams(`"source" must be "acp", "mcp", "cli" or "editor", not %q`, name)
}

// decode unmarshals a request's params into v, which must point to a
// struct, and checks that the required members are there. Its errors
// are paramErrors that say, in JSON terms, which member is wrong.
func decode(req *jsonrpc2.Request, v any, required ...string) error {
	if req.Params == nil || isNull(*req.Params) {
		if len(required) > 0 {
			return invalidParams("%s needs params {%s}", req.Method, strings.Join(required, ", "))
		}
		return nil
	}
	raw := []byte(*req.Params)
	if len(raw) == 0 || raw[0] != '{' {
		return invalidParams("the params of %s must be an object", req.Method)
	}
	if r := missingMember(raw, required); r != "" {
		return invalidParams("%s: %q is missing", req.Method, r)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if field == "" {
				field = "params"
			}
			return invalidParams("%s: %q must be %s, not %s", req.Method, field, jsonType(te.Type), te.Value)
		}
		return invalidParams("%s: %v", req.Method, err)
	}
	return nil
}

// missingMember returns the first of required that the object raw lacks
// or has as null. It reads raw in place: the params of a large write are
// not copied to be checked.
func missingMember(raw []byte, required []string) string {
	present := make(map[string]bool, len(required))
	for o := jsonscan.Open(raw); o.Next(); {
		present[o.Key()] = !o.IsNull()
	}
	for _, r := range required {
		if !present[r] {
			return r
		}
	}
	return ""
}

// jsonType names what JSON value a Go type takes.
func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer in range"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return jsonType(t.Elem())
	}
	return t.String()
}
