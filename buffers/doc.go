// Package buffers holds the unsaved text of files open in editors, as
// the editors push it: versioned, changed by full text or by ranges, in
// the text synchronisation model of LSP (didOpen, didChange, didSave,
// didClose). A [Set] is keyed by workspace-relative, slash-separated,
// clean paths ("src/main.go"); other paths are refused with an error
// wrapping fs.ErrInvalid.
//
// # Text
//
// Text is bytes and is kept exactly as given and edited: CRLF and lone
// "\r", a missing final newline, empty text and invalid UTF-8 all survive
// byte for byte. Nothing is normalised.
//
// # Positions
//
// Lines end at "\n", "\r\n" or a lone "\r", as in LSP; a position's line
// is 0-based and its character counts the line's content, without the
// terminator, in the negotiated [Encoding]: UTF-8 bytes or UTF-16 code
// units (a rune above U+FFFF is two units; each invalid byte is one
// character in either encoding). Positions are clamped, never refused for
// being out of the text:
//
//   - a character past the end of its line means the end of the line's
//     content, so an offset never falls between the "\r" and "\n" of a
//     CRLF and an insertion "at the end of a line" goes before its
//     terminator;
//   - a line past the last means the end of the text;
//   - a UTF-8 position inside a multi-byte sequence, or a UTF-16 position
//     between the two units of a surrogate pair, means the start of that
//     rune.
//
// A range whose Start comes after its End (compared as given, before
// clamping), or with a negative number, is refused with [ErrBadRange]:
// a client sending one has lost track of the text, and swapping the ends
// would corrupt it quietly. Editors whose own lines differ from LSP's
// (Vim shows a lone "\r" inside a line) should send full text for files
// that have one.
//
// # Versions and errors
//
// A change whose version is not above the buffer's is stale: ignored,
// reported as not applied, not an error. [Set.Open] always replaces. A
// batch of edits is applied whole or not at all: when one range is bad
// ([ErrBadRange]) or the result's length is not the one the client sent
// ([ErrResync]: ask it for the full text), the buffer keeps its text and
// version. Changes to a path that is not open fail with [ErrNotOpen].
// Errors name the operation and path and wrap these sentinels; compare
// with errors.Is.
//
// # Caching
//
// Each buffer is a rope: chunks of 0.5 to 2 KiB in a balanced tree whose
// nodes cache byte, line-end and UTF-16 counts, so finding a position is
// O(log n) plus a scan within one chunk, and an edit copies one or two
// chunks and O(log n) nodes, never the whole text. The tree is immutable:
// an edit builds a new root sharing the rest. [Set.Get] copies the text
// into one slice on the first call after a change and returns that slice
// until the next change; the rope is then re-pointed into it, so a buffer
// holds its text about once. Snapshots never change: callers must not
// modify their Text.
//
// # Locking
//
// All methods are safe for concurrent use. Set.mu guards the map of
// buffers and is held only to look up, add or remove one. In each buffer,
// a mutex serialises changes (an editor connection is the usual single
// writer) and an RWMutex guards the published state: a change computes
// its new rope holding only the first, and takes the second just to store
// the result, so readers wait for a pointer swap, never for an edit. The
// first Get after a change copies the text without holding either, and
// concurrent Gets of the same buffer wait for that one copy instead of
// each making their own. Lock order: buffer.write, Set.mu, buffer.mu,
// Set.evMu; buffer.fill before buffer.mu.
//
// # Events
//
// [Set.Watch] callbacks run after the change's locks are released, one at
// a time, in the order the changes happened (for each path, and overall),
// on the goroutine of a call that made a change. When another goroutine
// is already delivering events, a changing call returns at once and that
// goroutine delivers its event after the ones before it; so a callback
// may run after the call that caused it has returned. Callbacks may call
// the Set, including changing it (their own events follow the one being
// handled, without recursion), but must be quick: events queue behind a
// slow callback and the goroutine delivering them, some writer, is held
// up until it returns. Readers and other writers are not.
package buffers
