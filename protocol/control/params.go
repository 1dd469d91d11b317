package control

import (
	"github.com/draftfs/draftfs/buffers"
	"github.com/draftfs/draftfs/overlay"
)

// Params and results of the methods; the JSON names are the protocol.

// Implementation names a client or the daemon in initialize.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// initializeParams start a session.
type initializeParams struct {
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

// didOpenParams open or replace a buffer.
type didOpenParams struct {
	Path    string `json:"path"`
	Version int64  `json:"version"`
	Text    string `json:"text"`
}

// position is 0-based, its character counted in the negotiated encoding.
type position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// textRange is from Start to End.
type textRange struct {
	Start position `json:"start"`
	End   position `json:"end"`
}

func wireRange(r buffers.Range) textRange {
	return textRange{
		Start: position{Line: r.Start.Line, Character: r.Start.Character},
		End:   position{Line: r.End.Line, Character: r.End.Character},
	}
}

func (r textRange) buffers() buffers.Range {
	return buffers.Range{
		Start: buffers.Position{Line: r.Start.Line, Character: r.Start.Character},
		End:   buffers.Position{Line: r.End.Line, Character: r.End.Character},
	}
}

// textChange replaces Range with Text; without Range, the whole text.
type textChange struct {
	Range *textRange `json:"range,omitempty"`
	Text  string     `json:"text"`
}

// didChangeParams change a buffer: Text replaces it whole, or Changes
// edit it in order. Length, when given, is the byte length of the
// result, so drift shows as a CodeResync error.
type didChangeParams struct {
	Path    string       `json:"path"`
	Version int64        `json:"version"`
	Text    *string      `json:"text,omitempty"`
	Changes []textChange `json:"changes,omitempty"`
	Length  *int64       `json:"length,omitempty"`
}

// didChangeResult says whether the change was applied (false: its
// version was stale).
type didChangeResult struct {
	Applied bool `json:"applied"`
}

// draftParams choose a draft ("": the daemon's).
type draftParams struct {
	Draft string `json:"draft,omitempty"`
}

// gcParams choose a draft to collect, and whether only to report.
type gcParams struct {
	Draft  string `json:"draft,omitempty"`
	DryRun bool   `json:"dryRun,omitempty"`
}

// sourceParams choose a draft and name who acts, for the log ("cli",
// "editor", "acp", "mcp"; default "cli").
type sourceParams struct {
	Draft  string `json:"draft,omitempty"`
	Source string `json:"source,omitempty"`
}

// pathsParams choose paths of a draft (none: all).
type pathsParams struct {
	Draft string   `json:"draft,omitempty"`
	Paths []string `json:"paths,omitempty"`
	// Ignored: draft/diff gives the patches of what git ignores too.
	Ignored bool `json:"ignored,omitempty"`
	// Annotate: draft/diff says, for each hunk, which checkpoint last
	// wrote it and who (overlay.Annotation).
	Annotate bool `json:"annotate,omitempty"`
}

// readParams name a file of the merged view.
type readParams struct {
	Draft string `json:"draft,omitempty"`
	Path  string `json:"path"`
}

// readResult is a file's content: Text when it is UTF-8, else Data.
type readResult struct {
	Path string `json:"path"`
	Text string `json:"text"`
	Data []byte `json:"data,omitempty"`
	// Binary: the content is not UTF-8 and is in Data (base64).
	Binary bool `json:"binary,omitempty"`
}

// commitParams choose what to commit and how.
type commitParams struct {
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

// discardParams choose what to discard: Paths, or everything with All.
type discardParams struct {
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
