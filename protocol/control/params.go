package control

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"

	sjson "github.com/segmentio/encoding/json"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/draftfs/draftfs/buffers"
	"github.com/draftfs/draftfs/overlay"
)

// Params and results of the methods; the JSON names are the protocol.

// Implementation names a client or the daemon in initialize.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// InitializeParams start a session.
type InitializeParams struct {
	ClientInfo Implementation `json:"clientInfo"`
	// PositionEncodings the client can use, preferred first: "utf-8",
	// "utf-16". None: "utf-16", as in LSP.
	PositionEncodings []string `json:"positionEncodings,omitempty"`
}

// InitializeResult describes the daemon to a client.
type InitializeResult struct {
	ServerInfo       Implementation `json:"serverInfo"`
	PositionEncoding string         `json:"positionEncoding"`
	Workspace        string         `json:"workspace"`
	Draft            string         `json:"draft"`
	Mount            string         `json:"mount,omitempty"`
}

// bufferParams name a buffer (didSave, didClose).
type bufferParams struct {
	Path string `json:"path"`
}

// DidOpenParams open or replace a buffer.
type DidOpenParams struct {
	Path    string `json:"path"`
	Version int64  `json:"version"`
	Text    string `json:"text"`
}

// Position is 0-based, its character counted in the negotiated encoding.
type Position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// Range is from Start to End.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// TextChange replaces Range with Text; without Range, the whole text.
type TextChange struct {
	Range *Range `json:"range,omitempty"`
	Text  string `json:"text"`
}

// DidChangeParams change a buffer: Text replaces it whole, or Changes
// edit it in order. Length, when given, is the byte length of the
// result, so drift shows as a CodeResync error.
type DidChangeParams struct {
	Path    string       `json:"path"`
	Version int64        `json:"version"`
	Text    *string      `json:"text,omitempty"`
	Changes []TextChange `json:"changes,omitempty"`
	Length  *int64       `json:"length,omitempty"`
}

// didChangeResult says whether the change was applied (false: its
// version was stale).
type didChangeResult struct {
	Applied bool `json:"applied"`
}

// DraftParams choose a draft ("": the daemon's).
type DraftParams struct {
	Draft string `json:"draft,omitempty"`
}

// GCParams choose a draft to collect, and whether only to report.
type GCParams struct {
	Draft  string `json:"draft,omitempty"`
	DryRun bool   `json:"dryRun,omitempty"`
}

// SourceParams choose a draft and name who acts, for the log ("cli",
// "editor", "acp", "mcp"; default "cli").
type SourceParams struct {
	Draft  string `json:"draft,omitempty"`
	Source string `json:"source,omitempty"`
}

// PathsParams choose paths of a draft (none: all).
type PathsParams struct {
	Draft string   `json:"draft,omitempty"`
	Paths []string `json:"paths,omitempty"`
	// Ignored: draft/diff gives the patches of what git ignores too.
	Ignored bool `json:"ignored,omitempty"`
	// Annotate: draft/diff says, for each hunk, which checkpoint last
	// wrote it and who (overlay.Annotation).
	Annotate bool `json:"annotate,omitempty"`
}

// ReadParams name a file of the merged view.
type ReadParams struct {
	Draft string `json:"draft,omitempty"`
	Path  string `json:"path"`
}

// ReadResult is a file's content: Text when it is UTF-8, else Data.
type ReadResult struct {
	Path string `json:"path"`
	Text string `json:"text"`
	Data []byte `json:"data,omitempty"`
	// Binary: the content is not UTF-8 and is in Data (base64).
	Binary bool `json:"binary,omitempty"`
}

// CommitParams choose what to commit and how.
type CommitParams struct {
	Draft string   `json:"draft,omitempty"`
	Paths []string `json:"paths,omitempty"`
	// Hunks are hunk IDs (from draft/hunks or draft/diff) to commit,
	// instead of Paths.
	Hunks  []string `json:"hunks,omitempty"`
	Force  bool     `json:"force,omitempty"`
	DryRun bool     `json:"dryRun,omitempty"`
	// SkipIgnored leaves out what git ignores (and .git directories).
	SkipIgnored bool `json:"skipIgnored,omitempty"`
	// AllowSetid and AllowOwner commit set-id/sticky bits and owners
	// other than the disk's (see overlay.CommitOptions).
	AllowSetid bool `json:"allowSetid,omitempty"`
	AllowOwner bool `json:"allowOwner,omitempty"`
	// Progress asks for draft/commitProgress notifications.
	Progress bool   `json:"progress,omitempty"`
	Source   string `json:"source,omitempty"`
}

// progressParams report a running commit.
type progressParams struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// DiscardParams choose what to discard: Paths, or everything with All.
type DiscardParams struct {
	Draft string   `json:"draft,omitempty"`
	Paths []string `json:"paths,omitempty"`
	// Hunks are hunk IDs to discard, instead of Paths.
	Hunks  []string `json:"hunks,omitempty"`
	All    bool     `json:"all,omitempty"`
	Source string   `json:"source,omitempty"`
}

// FileHunks are the hunks of one changed file (draft/hunks): its
// diff's, without the patch.
type FileHunks struct {
	Path   string         `json:"path"`
	From   string         `json:"from,omitempty"`
	Change string         `json:"change"`
	Merged bool           `json:"merged,omitempty"`
	Hunks  []overlay.Hunk `json:"hunks"`
}

// pathsResult lists paths (discard).
type pathsResult struct {
	Paths []string `json:"paths"`
}

// mountResult is where the draft is mounted.
type mountResult struct {
	Mount string `json:"mount"`
}

// ChangeNotice is draft/didChange: Path (absolute) changed in the merged
// view of Draft ("": below every draft: a buffer or the disk). Overflow:
// notices were lost, every path may have changed.
type ChangeNotice struct {
	Draft    string `json:"draft,omitempty"`
	Path     string `json:"path"`
	From     string `json:"from,omitempty"`
	Change   string `json:"change"`
	Source   string `json:"source,omitempty"`
	Overflow bool   `json:"overflow,omitempty"`
}

// pathsNotice is draft/didCommit and draft/didDiscard: absolute paths.
type pathsNotice struct {
	Draft string   `json:"draft"`
	Paths []string `json:"paths"`
}

// resyncNotice is buffer/resync: a buffer change sent as a notification
// failed; the client should send the buffer's full text.
type resyncNotice struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// fsParams is the common part of the fs/* methods, for front ends that
// reach the merged view through the daemon.
type fsParams struct {
	Draft string `json:"draft,omitempty"`
	// Source is the front end, recorded in the log: "acp", "mcp", "cli".
	Source string `json:"source"`
	Path   string `json:"path"`
}

// fsReadParams read a file.
type fsReadParams struct {
	fsParams
	// Limit refuses files over this many bytes (CodeTooLarge); <= 0:
	// the largest message a client reads.
	Limit int64 `json:"limit,omitempty"`
}

// fsWriteParams write a file.
type fsWriteParams struct {
	fsParams
	Data []byte `json:"data"` // base64
	Mode uint32 `json:"mode,omitempty"`
}

// fsRenameParams rename From to To.
type fsRenameParams struct {
	Draft  string `json:"draft,omitempty"`
	Source string `json:"source"`
	From   string `json:"from"`
	To     string `json:"to"`
}

// fsDiscardParams drop the draft's changes at Paths (keys), or all of
// them, as agent.Files.Discard: paths without changes are no error.
type fsDiscardParams struct {
	Draft  string   `json:"draft,omitempty"`
	Source string   `json:"source"`
	Paths  []string `json:"paths,omitempty"`
	All    bool     `json:"all,omitempty"`
}

// keyResult is a resolved path.
type keyResult struct {
	Key string `json:"key"`
}

// dataResult is a file's content.
type dataResult struct {
	Data []byte `json:"data"`
}

func (p DraftParams) ref() (string, string)     { return p.Draft, "" }
func (p GCParams) ref() (string, string)        { return p.Draft, "" }
func (p SourceParams) ref() (string, string)    { return p.Draft, p.Source }
func (p PathsParams) ref() (string, string)     { return p.Draft, "" }
func (p ReadParams) ref() (string, string)      { return p.Draft, "" }
func (p CommitParams) ref() (string, string)    { return p.Draft, p.Source }
func (p DiscardParams) ref() (string, string)   { return p.Draft, p.Source }
func (p fsParams) ref() (string, string)        { return p.Draft, p.Source }
func (p fsRenameParams) ref() (string, string)  { return p.Draft, p.Source }
func (p fsDiscardParams) ref() (string, string) { return p.Draft, p.Source }

func (p CommitParams) check() error {
	if len(p.Hunks) > 0 && len(p.Paths) > 0 {
		return invalidParams(`draft/commit: give "paths" or "hunks", not both`)
	}
	return nil
}

func (p DiscardParams) check() error {
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
func (p DidOpenParams) bufferPath() string   { return p.Path }
func (p DidChangeParams) bufferPath() string { return p.Path }

func (p DidChangeParams) check() error {
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
	key := ""
	for t := sjson.NewTokenizer(raw); t.Next(); {
		switch {
		case t.Depth != 1:
		case t.IsKey:
			key = string(t.String())
		case t.Delim == 0 || t.Delim == '{' || t.Delim == '[':
			present[key] = t.Kind() != sjson.Null
		}
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
