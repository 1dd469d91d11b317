package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// tool is one MCP tool: what tools/list shows and what runs it.
type tool struct {
	name, title, desc string
	props             []prop
	readOnly          bool
	destructive       bool // meaningful when !readOnly
	idempotent        bool // meaningful when !readOnly
	// output are the structured output's properties besides "content",
	// as JSON Schemas; outputSchema, when set, replaces the whole schema.
	output       map[string]any
	outputSchema map[string]any
	writes       bool // changes the view: serialised with other writers
	run          func(s *Server, ctx context.Context, a args) (*result, error)
}

// result is what a tool returns: text (also the structured "content"),
// more structured fields, or content blocks of its own.
type result struct {
	text       string
	structured map[string]any
	content    []sdk.Content // replaces the text block when set
}

func textResult(text string) *result { return &result{text: text} }

func (r *result) sdkResult() *sdk.CallToolResult {
	out := &sdk.CallToolResult{Content: r.content}
	if r.content == nil {
		out.Content = []sdk.Content{&sdk.TextContent{Text: r.text}}
		st := map[string]any{"content": r.text}
		for k, v := range r.structured {
			st[k] = v
		}
		out.StructuredContent = st
	} else {
		out.StructuredContent = r.structured
	}
	return out
}

func (t *tool) sdkTool() *sdk.Tool {
	f := false
	ann := &sdk.ToolAnnotations{ReadOnlyHint: t.readOnly, OpenWorldHint: &f}
	if !t.readOnly {
		d := t.destructive
		ann.DestructiveHint = &d
		ann.IdempotentHint = t.idempotent
	}
	out := t.outputSchema
	if out == nil {
		props := map[string]any{"content": map[string]any{"type": "string"}}
		for k, v := range t.output {
			props[k] = v
		}
		out = map[string]any{
			"type":                 "object",
			"properties":           props,
			"required":             []string{"content"},
			"$schema":              draft07,
			"additionalProperties": false,
		}
	}
	return &sdk.Tool{
		Name:         t.name,
		Title:        t.title,
		Description:  t.desc,
		InputSchema:  inputSchema(t.props),
		OutputSchema: out,
		Annotations:  ann,
	}
}

// Property lists shared by several tools.
var (
	pathProp   = prop{name: "path", kind: kString, required: true}
	headTail   = []prop{pathProp, {name: "tail", kind: kNumber, desc: "If provided, returns only the last N lines of the file"}, {name: "head", kind: kNumber, desc: "If provided, returns only the first N lines of the file"}}
	onlyPath   = []prop{pathProp}
	excludes   = prop{name: "excludePatterns", kind: kStrings, def: []string{}}
	keysFilter = []prop{{name: "paths", kind: kStrings, desc: "Only these files or directories; all of the allowed directories when absent."}}
)

// toolList is every tool, in the order tools/list shows them: the
// reference server's, then draftfs's own.
func toolList() []*tool {
	return []*tool{
		{
			name: "read_file", title: "Read File (Deprecated)", readOnly: true,
			desc:   "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.",
			props:  headTail,
			output: readOutput,
			run:    (*Server).readTextFile,
		},
		{
			name: "read_text_file", title: "Read Text File", readOnly: true,
			desc: "Read the complete contents of a file from the file system as text. " +
				"Handles various text encodings and provides detailed error messages " +
				"if the file cannot be read. Use this tool when you need to examine " +
				"the contents of a single file. Use the 'head' parameter to read only " +
				"the first N lines of a file, or the 'tail' parameter to read only " +
				"the last N lines of a file. Operates on the file as text regardless of extension. " +
				"Only works within allowed directories.",
			props:  headTail,
			output: readOutput,
			run:    (*Server).readTextFile,
		},
		{
			name: "read_media_file", title: "Read Media File", readOnly: true,
			desc: "Read a file and return it as a base64-encoded content block with its MIME type. " +
				"Image and audio files are returned as image/audio content; any other file type is " +
				"returned as an embedded resource. Only works within allowed directories.",
			props:        onlyPath,
			outputSchema: mediaOutputSchema,
			run:          (*Server).readMediaFile,
		},
		{
			name: "read_multiple_files", title: "Read Multiple Files", readOnly: true,
			desc: "Read the contents of multiple files simultaneously. This is more " +
				"efficient than reading files one by one when you need to analyze " +
				"or compare multiple files. Each file's content is returned with its " +
				"path as a reference. Failed reads for individual files won't stop " +
				"the entire operation. Only works within allowed directories.",
			props: []prop{{name: "paths", kind: kStrings, required: true, minItems: 1,
				desc: "Array of file paths to read. Each path must be a string pointing to a valid file within allowed directories."}},
			run: (*Server).readMultipleFiles,
		},
		{
			name: "write_file", title: "Write File", destructive: true, idempotent: true, writes: true,
			desc: "Create a new file or completely overwrite an existing file with new content. " +
				"Use with caution as it will overwrite existing files without warning. " +
				"Handles text content with proper encoding. Only works within allowed directories.",
			props: []prop{pathProp, {name: "content", kind: kString, required: true}},
			run:   (*Server).writeFile,
		},
		{
			name: "edit_file", title: "Edit File", destructive: true, writes: true,
			desc: "Make line-based edits to a text file. Each edit replaces exact line sequences " +
				"with new content. Returns a git-style diff showing the changes made. " +
				"Only works within allowed directories.",
			props: []prop{pathProp, {name: "edits", kind: kEdits, required: true},
				{name: "dryRun", kind: kBool, def: false, desc: "Preview changes using git-style diff format"}},
			run: (*Server).editFile,
		},
		{
			name: "create_directory", title: "Create Directory", idempotent: true, writes: true,
			desc: "Create a new directory or ensure a directory exists. Can create multiple " +
				"nested directories in one operation. If the directory already exists, " +
				"this operation will succeed silently. Perfect for setting up directory " +
				"structures for projects or ensuring required paths exist. Only works within allowed directories.",
			props: onlyPath,
			run:   (*Server).createDirectory,
		},
		{
			name: "list_directory", title: "List Directory", readOnly: true,
			desc: "Get a detailed listing of all files and directories in a specified path. " +
				"Results clearly distinguish between files and directories with [FILE] and [DIR] " +
				"prefixes. This tool is essential for understanding directory structure and " +
				"finding specific files within a directory. Only works within allowed directories.",
			props: onlyPath,
			run:   (*Server).listDirectory,
		},
		{
			name: "list_directory_with_sizes", title: "List Directory with Sizes", readOnly: true,
			desc: "Get a detailed listing of all files and directories in a specified path, including sizes. " +
				"Results clearly distinguish between files and directories with [FILE] and [DIR] " +
				"prefixes. This tool is useful for understanding directory structure and " +
				"finding specific files within a directory. Only works within allowed directories.",
			props: []prop{pathProp, {name: "sortBy", kind: kEnum, enum: []string{"name", "size"}, def: "name", desc: "Sort entries by name or size"}},
			run:   (*Server).listDirectoryWithSizes,
		},
		{
			name: "directory_tree", title: "Directory Tree", readOnly: true,
			desc: "Get a recursive tree view of files and directories as a JSON structure. " +
				"Each entry includes 'name', 'type' (file/directory), and 'children' for directories. " +
				"Files have no children array, while directories always have a children array (which may be empty). " +
				"The output is formatted with 2-space indentation for readability. Only works within allowed directories.",
			props: []prop{pathProp, excludes},
			run:   (*Server).directoryTree,
		},
		{
			name: "move_file", title: "Move File", destructive: true, writes: true,
			desc: "Move or rename files and directories. Can move files between directories " +
				"and rename them in a single operation. If the destination exists, the " +
				"operation will fail. Works across different directories and can be used " +
				"for simple renaming within the same directory. Both source and destination must be within allowed directories.",
			props: []prop{{name: "source", kind: kString, required: true}, {name: "destination", kind: kString, required: true}},
			run:   (*Server).moveFile,
		},
		{
			name: "search_files", title: "Search Files", readOnly: true,
			desc: "Recursively search for files and directories matching a pattern. " +
				"The patterns should be glob-style patterns that match paths relative to the working directory. " +
				"Use pattern like '*.ext' to match files in current directory, and '**/*.ext' to match files in all subdirectories. " +
				"Returns full paths to all matching items. Great for finding files when you don't know their exact location. " +
				"Only searches within allowed directories.",
			props: []prop{pathProp, {name: "pattern", kind: kString, required: true}, excludes},
			run:   (*Server).searchFiles,
		},
		{
			name: "get_file_info", title: "Get File Info", readOnly: true,
			desc: "Retrieve detailed metadata about a file or directory. Returns comprehensive " +
				"information including size, creation time, last modified time, permissions, " +
				"and type. This tool is perfect for understanding file characteristics " +
				"without reading the actual content. Only works within allowed directories.",
			props:  onlyPath,
			output: infoOutput,
			run:    (*Server).getFileInfo,
		},
		{
			name: "list_allowed_directories", title: "List Allowed Directories", readOnly: true,
			desc: "Returns the list of directories that this server is allowed to access. " +
				"Subdirectories within these allowed directories are also accessible. " +
				"Use this to understand which directories and their nested paths are available " +
				"before trying to access files.",
			run: (*Server).listAllowedDirectories,
		},
		{
			name: "delete_file", title: "Delete File", destructive: true, idempotent: true, writes: true,
			desc: "Delete a file, a symlink or an empty directory (with recursive: true, a directory and everything in it). " +
				"The deletion lands in the draft: nothing leaves the disk until the user commits, " +
				"and restore_file brings the path back. Only works within allowed directories.",
			props: []prop{pathProp, {name: "recursive", kind: kBool, def: false, desc: "Delete a directory and everything in it"}},
			run:   (*Server).deleteFile,
		},
		{
			name: "restore_file", title: "Restore File", destructive: true, idempotent: true, writes: true,
			desc: "Drop the draft's changes to a file or directory (written, edited, created, moved or deleted " +
				"through this server or any other agent), so it reads again as the user has it. " +
				"Only works within allowed directories.",
			props: onlyPath,
			run:   (*Server).restoreFile,
		},
		{
			name: "copy_file", title: "Copy File", writes: true,
			desc: "Copy a file, or a directory and everything in it, to a destination that does not exist yet. " +
				"The copy lands in the draft. Both source and destination must be within allowed directories.",
			props: []prop{{name: "source", kind: kString, required: true}, {name: "destination", kind: kString, required: true}},
			run:   (*Server).copyFile,
		},
		{
			name: "append_file", title: "Append to File", writes: true,
			desc: "Append text to the end of a file, creating it if it does not exist (its directory must). " +
				"The change lands in the draft. Only works within allowed directories.",
			props: []prop{pathProp, {name: "content", kind: kString, required: true}},
			run:   (*Server).appendFile,
		},
		searchContentTool,
		{
			name: "draft_status", title: "Draft Status", readOnly: true,
			desc: "List the changes in the draft that the user has not committed yet, one per line: " +
				"M modified, A added, D deleted, R renamed (old -> new), C changed by the user since the draft changed it (a conflict). " +
				"Only covers the allowed directories.",
			props:  keysFilter,
			output: map[string]any{"changes": map[string]any{"type": "array"}},
			run:    (*Server).draftStatus,
		},
		{
			name: "draft_diff", title: "Draft Diff", readOnly: true,
			desc: "Show the draft's changes as a git-style unified diff, from what the user has now " +
				"(their unsaved editor text, else the disk) to the draft. Only covers the allowed directories.",
			props: keysFilter,
			run:   (*Server).draftDiff,
		},
	}
}
