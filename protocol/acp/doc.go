// Package acp serves the file-system methods of the Agent Client
// Protocol (v1) from draftfs's merged view, and proxies ACP between an
// editor and an agent so that the agent reads what the user sees and
// writes into a draft.
//
// # Handlers
//
// [FS] answers fs/read_text_file and fs/write_text_file for the sessions
// its Session function knows, as a jsonrpc2.Handler on any connection or
// through [FS.Serve]. The semantics are Zed's, the reference client's:
//
//   - Paths are absolute. A path outside the session's directories (its
//     cwd and additionalDirectories), out of the workspace through a
//     symlink, or missing is -32002 "resource not found" with data.uri,
//     the path as given; an unknown session is -32002 with
//     data.sessionId.
//   - line is 1-based, 0 or absent meaning the first; limit is a number
//     of lines, absent meaning all. Lines end after "\n" and keep it (a
//     "\r" before it too: text is served byte for byte, never
//     normalised). The text after the last newline is one more line,
//     empty when the file ends with one, so reading from the line after
//     the last newline gives "". A start past that is -32602, with a
//     message naming the line asked and where the file ends, and Zed's
//     own text ("Attempting to read beyond the end of the file, line
//     R:C") as data.
//   - fs/write_text_file replaces or creates the file, and its parent
//     directories, in the draft, never on disk; empty content is a valid
//     (empty) file. The result is {}.
//   - Malformed params (missing sessionId or path, a negative line) are
//     -32602.
//
// # Limits
//
// Only text travels: a file with a NUL byte is refused as binary, and a
// file that is not valid UTF-8 is refused as such (-32603, the message
// says which and where), because a JSON string carries Unicode only: the
// bad bytes would reach the agent as U+FFFD, and the file would be
// corrupted if the agent wrote it back. Writes are UTF-8 by construction.
// Files over [MaxFileSize] (16 MiB) are refused both ways, and a read
// whose JSON would not fit one message ([MaxMessage]) is refused with a
// hint to read it in pieces.
//
// # Proxy
//
// [Run] sits where the editor expects the agent: it starts the agent as
// a child and forwards every line both ways as it came, byte for byte
// (ids, params and _meta untouched), except:
//
//   - initialize from the editor reaches the agent with
//     clientCapabilities.fs set to {readTextFile: true, writeTextFile:
//     true}, other members kept; the proxy remembers what the editor
//     itself advertised.
//   - fs/read_text_file and fs/write_text_file from the agent are
//     answered by the proxy from the merged view of the session's
//     workspace, and never reach the editor. The session is known from
//     the cwd and additionalDirectories of session/new (and load,
//     resume, fork) and the sessionId in the request or its answer.
//     When the editor advertised fs.readTextFile, a read of a file the
//     draft has no entry for is first asked of the editor, which knows
//     its unsaved buffers, and falls back to the merged view when the
//     editor fails.
//   - terminal/create is sent on with its command wrapped by
//     Options.Terminal (`draftfs run`), so the command sees the merged
//     view, with cwd and everything else kept; unchanged when the editor
//     did not advertise terminals. One that cannot be wrapped (an
//     unknown sessionId, a command that is not a string) is answered
//     -32602 and never reaches the editor: unwrapped, it would run on
//     the real disk.
//   - $/cancel_request from the agent for a request the proxy is still
//     answering cancels it there (-32800, and the editor is told when the
//     proxy was asking it); every other cancellation, also one for a
//     request the proxy has already answered, and session/cancel pass
//     through.
//
// Requests the proxy sends itself (reads asked of the editor, and their
// cancellations) have string ids "draftfs-<random>-<n>", which neither
// side's own ids can equal in practice; the editor's answers to them are
// not forwarded.
//
// Lines are read with a framing of the proxy's own: any length up to
// [MaxMessage] (32 MiB, the TypeScript SDK's default), CRLF accepted,
// blank lines skipped. A line that is not JSON is answered with a parse
// error (-32700, id null) to the side that sent it, a longer one is
// skipped and answered -32600; neither ends the session. When the agent
// exits or crashes, every editor request it left unanswered gets an
// error, and Run returns the agent's exit status.
//
// # Locking
//
// Each side's messages are read and routed by one goroutine, in order;
// writes to each side are whole lines under that side's lineWriter
// lock. The fs requests the proxy answers run on goroutines chained so
// that they take effect in arrival order. proxy.mu protects the routing
// tables and is never held across I/O; sessions have locks of their own
// (see sessions).
package acp
