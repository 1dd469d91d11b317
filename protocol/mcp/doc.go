// Package mcp serves the merged view of a draft (a [agent.Files]) as an
// MCP server, built on the official Go SDK. It has the tools of the
// reference filesystem server, @modelcontextprotocol/server-filesystem,
// with the same names, input schemas, annotations and answers, so clients
// and prompts tuned for the reference work unchanged; reads see unsaved
// editor buffers and every change lands in the draft, never on disk.
//
// # Tools
//
// From the reference: read_text_file (head, tail), read_file (its
// deprecated name), read_media_file, read_multiple_files, write_file,
// edit_file (whitespace-tolerant matching, dryRun, the same unified diff),
// create_directory, list_directory, list_directory_with_sizes,
// directory_tree, move_file, search_files (minimatch globs with
// excludePatterns), get_file_info, list_allowed_directories.
//
// draftfs's own: delete_file (a whiteout in the draft; recursive for
// directories), restore_file (drops the draft's changes at a path),
// copy_file, append_file, search_content (text or RE2 over file contents,
// ranked, deduplicated, with context), and the read-only draft_status and
// draft_diff. No tool commits: that is the user's.
//
// read_text_file's structured output also carries the whole file's size,
// modification time and SHA-256 and whether head or tail left lines out;
// get_file_info's text and structured output add the SHA-256 of a
// regular file.
//
// # Paths
//
// Paths are checked as the reference checks them: relative paths are
// taken from the first allowed directory that keeps them inside one; the
// path, and wherever its symlinks lead, must lie in an allowed directory.
// Allowed directories come from [Options.Dirs] (default: the workspace)
// and must lie inside the workspace; one above it stands for the
// workspace. A client with MCP roots replaces them with its roots after
// initialization and on notifications/roots/list_changed; tool calls wait
// while roots are being fetched. Symlinks are resolved inside the merged
// view by [agent.Files.Resolve], which refuses any that leave the
// workspace.
//
// # Errors
//
// Bad input never ends the server: it is a tool result with isError set
// and a message, in the reference's words where the reference has some
// (Node's "ENOENT: no such file or directory, open '...'", zod's
// "Invalid input: expected string, received number at path", "Access
// denied - ..."). Even a panic in a tool becomes such a result.
//
// # Reference compatibility
//
// What makes answers byte-identical to the reference's (minimatch globs,
// the npm diff package's unified diff, edit_file's matching, Node's text
// decoding, sizes, dates and collation) lives in
// protocol/mcp/internal/reference, each piece tested against the
// reference's own code run by node.
//
// # Differences from the reference
//
// On purpose, each asserted by the differential test:
//   - reads show the draft and unsaved editor buffers; writes go to the
//     draft and leave the disk untouched;
//   - binary files (a NUL byte in the first 8000 bytes) are refused as
//     text; files over [Options.MaxFileSize] (default
//     [DefaultMaxFileSize], 10 MiB) are not read by any tool, not even
//     for head or tail ([agent.Files] reads only whole files);
//   - invalid UTF-8 is shown as Node shows it, but edit_file and
//     append_file keep the file's bytes as they are;
//   - an unclosed "[", "{" or "(" in a glob is an error, not a literal;
//   - edit_file keeps a CRLF file's line ends (the reference rewrites it
//     with LF);
//   - sizes never follow a symlink out of the workspace (the reference's
//     list_directory_with_sizes stats the target wherever it is);
//   - listings come in name order (the reference's, in the disk's order);
//   - get_file_info's created and accessed times are the modification
//     time: the merged view keeps one time per file;
//   - a root above the workspace allows the workspace: nothing else is in
//     the view;
//   - on stdio ([Server.RunStdio]) a message over [MaxMessageSize]
//     (64 MiB), one that is not JSON, or a batch is answered with an
//     error and skipped; the session goes on (the reference reports it
//     on stderr and drops it).
//
// # Resources
//
// Files and directories are resources under the template file:///{+path};
// directories read as a list_directory listing. A client may subscribe to
// any of them: a change in the merged view at or below it (an editor
// keystroke, another agent's write, a commit or discard), as
// [agent.Files.Watch] reports it, sends notifications/resources/updated
// with the subscribed URI.
//
// # Locking
//
// Server.mu guards the allowed directories and the pending roots update;
// tools take a snapshot of the directories and never hold it across file
// operations. Server.writeMu serialises the tools that change the view, so
// that two edits of one file cannot interleave their read and write;
// reads run concurrently. The subscriptions have their own mutex, taken by
// the engine's change feed callback only to record a key; notifications
// are sent from a goroutine of their own.
package mcp
