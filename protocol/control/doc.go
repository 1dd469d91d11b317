// Package control is the daemon's control socket: JSON-RPC 2.0, one
// message per line, over a Unix socket, for editors (buffers), the
// draftfs command line (review) and front ends in other processes (the
// merged view). [Server] answers it over an open workspace; [Client]
// and [Files] speak it.
//
// # Socket
//
// The socket is [SocketPath] of the workspace's state directory, mode
// 0600 in a 0700 directory; [Server.Serve] also refuses peers of another
// user (SO_PEERCRED). [Listen] replaces a socket left by a daemon that
// died and refuses to start a second one ([ErrRunning]).
//
// # Methods
//
// Paths are absolute inside the workspace or relative to its root; a
// path that leaves it, also through a symlink, is refused (-32602, data
// kind "outside"). Results of draft/* are what `draftfs CMD --json`
// prints.
//
//	initialize {clientInfo, positionEncodings?} → {serverInfo, positionEncoding, workspace, draft, mount?}
//	buffer/didOpen {path, version, text}
//	buffer/didChange {path, version, text} | {path, version, changes: [{range?, text}], length?} → {applied}
//	buffer/didSave {path}, buffer/didClose {path}, buffer/list → [{path, version, dirty, size}]
//	draft/status {paths?} → [{path, change, from?, conflict, ignored?, fold?, alsoIn?}]
//	draft/diff {paths?, ignored?} → [{path, from?, change, binary, added, deleted, patch, ignored?, merged?, hunks}]
//	draft/hunks {paths?, ignored?} → [{path, from?, change, merged?, hunks: [hunk]}]
//	  hunk: {id, text, whole?, oldStart, oldLines, newStart, newLines, parts?: [hunk]}
//	draft/read {path} → {path, text} | {path, data (base64), binary: true}
//	draft/commit {paths? | hunks?, force?, dryRun?, skipIgnored?, progress?} → {id, applied, merged?, conflicts?}
//	draft/discard {paths} | {hunks} | {all: true} → {paths}
//	draft/undo → {id, paths}
//	draft/log → [{time, op, path?, from?, paths?, source}]
//	draft/timeline → [checkpoint], newest first; checkpoint: {id, time,
//	  author: {source, name?, session?}, label?, files, added, deleted, rewound?, state, hash}
//	draft/diffRange {from, to, paths?} → as draft/diff, checkpoint from (0: below the draft) to to
//	draft/rewind {checkpoint} → checkpoint (the rewind's own)
//	draft/beginStep {author, label?, run?} → {step}; draft/endStep {step} → checkpoint | null
//	draft/gc {dryRun?} → {dryRun?, size, undo, blobs, data, freed, expired, blobsDropped}
//	draft/mount → {mount}
//	draft/list → [{name, changes, ignored?, mount?, default?, users?: [{pid, client?, command?}], error?}]
//	fs/resolve, fs/stat, fs/lstat, fs/readDir, fs/readFile, fs/writeFile,
//	fs/mkdirAll, fs/remove, fs/removeAll, fs/rename, fs/discard: see [Files]
//
// Every draft/* and fs/* method takes an optional "draft" (default: the
// daemon's); fs/* take a "source" ("acp", "mcp") that the draft's log
// records. Changes between draft/beginStep and draft/endStep make one
// checkpoint of the timeline (a `draftfs run`, an ACP prompt turn, an MCP
// tool call); a connection's steps end with it. A step's "run" (the
// argv a `draftfs run` started) says that until it ends, the processes
// the client starts, and theirs, make their changes through the
// daemon's mounts as that command (the log's "by"). A hunk's id names one change of one file for as long as
// neither the draft nor the user's file changes (overlay.Hunk); "hunks"
// in draft/commit and draft/discard take just those (a part of a hunk
// by its own id), leaving the rest of the file's change in the draft; an
// id that names nothing now is refused (data kind "noHunk"): list the
// hunks again. Buffer methods of one connection apply in arrival order; the
// others of a connection may run concurrently. Buffer methods may be
// sent as notifications; when one fails the daemon sends buffer/resync
// {path, message}: the client should send the full text. Buffers a
// connection opens after initialize are that editor's: they close when
// the connection ends (its unsaved text went with it). Buffers opened
// without initialize (scripts, `draftfs buffer open`) stay until
// buffer/didClose.
//
// After initialize a connection receives draft/didChange {draft, path,
// change, from?, source}, draft/didCommit {draft, paths} and
// draft/didDiscard {draft, paths} (absolute paths). A client that falls
// more than 1024 notifications behind loses them and gets one
// draft/didChange with "overflow": true instead: it must treat every
// path as changed. A client that does not take a message for a minute is
// disconnected. A commit with progress: true also sends
// draft/commitProgress {done, total} to its caller.
//
// # Errors
//
// Lines that are not UTF-8 JSON get -32700; JSON that is not a request,
// a batch, or a message over [MaxMessage] bytes gets -32600; an unknown
// method -32601; missing or mistyped params, text with a lone UTF-16
// surrogate, a path outside the workspace -32602. The connection stays
// open. Refusals are [CodeRefused] (conflicts, with the commit's report
// in data.result; nothing to undo; disk changed since the commit; a
// hunk id that names nothing now), a
// missing file or buffer [CodeNotFound], buffer drift [CodeResync], other
// file errors [CodeFileSystem] with data.errno. The [Client] turns them
// back into the engine's errors (see [Error]).
package control
