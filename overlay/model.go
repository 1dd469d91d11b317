//go:build linux

package overlay

import (
	"io/fs"
	"strings"
	"time"
)

// kind is what a draft entry holds.
type kind uint8

const (
	kindWhiteout kind = iota + 1 // the path is deleted in the draft
	kindDir
	kindFile
	kindSymlink
	// kindSpecial: a FIFO, a Unix socket or a device node. The object
	// is all metadata (its inode's Mode and Rdev): the kernel serves its
	// I/O, never the view.
	kindSpecial
)

// specialTypes are the mode bits of the special file types.
const specialTypes = fs.ModeNamedPipe | fs.ModeSocket | fs.ModeDevice | fs.ModeCharDevice

func kindOf(m fs.FileMode) kind {
	switch {
	case m.IsDir():
		return kindDir
	case m&fs.ModeSymlink != 0:
		return kindSymlink
	case m&specialTypes != 0:
		return kindSpecial
	}
	return kindFile
}

// entry is one path of the draft. Persisted as JSON in the "entries"
// bucket under its key.
type entry struct {
	Kind kind `json:"k"`
	// Ino names the draft inode holding the object. It is 0 for whiteouts
	// and for a renamed file or symlink whose content is still its
	// origin's (a redirect, resolved lazily).
	Ino uint64 `json:"i,omitempty"`
	// Opaque: a directory through which nothing below shows (it was
	// removed and made again in the draft).
	Opaque bool `json:"o,omitempty"`
	// Ctime is when a redirect's object was renamed (ns): a rename
	// changes the object, whose other times stay the lower object's.
	Ctime int64 `json:"ct,omitempty"`
	// Origin is the lower path this entry came from by rename: a
	// directory's lower content is read there, and a redirect's object.
	Origin string `json:"r,omitempty"`
	// Base is what the path held in the lower layers when the draft first
	// changed it; commit detects conflicts against it.
	Base *base `json:"b,omitempty"`
}

// redirect reports whether the entry's object is still its origin's.
func (e *entry) redirect() bool {
	return e.Ino == 0 && e.Kind != kindWhiteout
}

// inode is an object owned by the draft. Persisted as JSON in the
// "inodes" bucket.
type inode struct {
	Mode fs.FileMode `json:"m"` // type and permission bits
	// Data: the content lives in the draft's data directory; size and
	// mtime are the data file's own.
	Data   bool   `json:"d,omitempty"`
	Target string `json:"t,omitempty"`  // symlink target
	Mtime  int64  `json:"mt,omitempty"` // ns, for objects without Data
	Atime  int64  `json:"at,omitempty"` // ns, likewise; 0: Mtime
	// Ctime is when the inode last changed (ns): for an object with Data
	// the later of it and the data file's own ctime, which writes,
	// truncates and utimes move. 0: Mtime.
	Ctime int64             `json:"ct,omitempty"`
	Rdev  uint64            `json:"rd,omitempty"` // a device node's device number
	Uid   int               `json:"u,omitempty"`
	Gid   int               `json:"g,omitempty"`
	Xattr map[string][]byte `json:"x,omitempty"`
	// Born identifies the disk object whose inode number the inode
	// kept at copy-up (see identity.go); 0: a number of the draft's own.
	Born int64 `json:"b,omitempty"`
	// File numbers the data file (see fileName) when its name is not the
	// inode number's: a new file's, which a spare may give it (see
	// spares); 0: named by the inode number (see dataName).
	File uint64 `json:"f,omitempty"`
}

// base records what a path held in the lower layers before the draft
// changed it: enough to tell later whether the user changed it since and
// to merge 3-way (the content itself is kept as a blob named by Hash).
type base struct {
	Path string `json:"p"` // lower path it was read from
	// NoLower: nothing below the draft can show at the path (it is under
	// an opaque directory); the directory's own base speaks for it.
	NoLower bool        `json:"n,omitempty"`
	Exists  bool        `json:"e"`
	Kind    kind        `json:"k,omitempty"`
	Mode    fs.FileMode `json:"m,omitempty"`
	Hash    string      `json:"h,omitempty"` // sha256 of the content or symlink target
	Size    int64       `json:"s,omitempty"`
	Mtime   int64       `json:"t,omitempty"`  // disk mtime in ns, when read from disk
	Rdev    uint64      `json:"rd,omitempty"` // a device node's device number
	// Version is the editor buffer's version when the base was read from
	// an unsaved buffer, 0 when it came from disk.
	Version int64 `json:"v,omitempty"`
	Kept    bool  `json:"kept,omitempty"` // the content is stored as a blob
}

// Source says which front end made a change; it is recorded in the log.
type Source string

// The sources of changes.
const (
	SourceMount  Source = "mount"
	SourceACP    Source = "acp"
	SourceMCP    Source = "mcp"
	SourceCLI    Source = "cli"
	SourceEditor Source = "editor"
	SourceDisk   Source = "disk"
)

// By returns s naming who, within the front end, made a change: the
// process behind a write through the mount, the editor that pushed a
// buffer, the command of the CLI. Every change an [Fs] or a method
// makes with it is logged and published with s as its Source and who as
// its By; within the engine it is a plain Source, so that changes by
// two processes through one mount never coalesce in the log.
func (s Source) By(who string) Source {
	if who == "" {
		return s
	}
	return s + bySep + Source(who)
}

// bySep separates a Source from its By inside the engine: a byte no
// command line or client name holds.
const bySep = "\x00"

// split returns the front end and who (see [Source.By]).
func (s Source) split() (Source, string) {
	src, who, _ := strings.Cut(string(s), bySep)
	return Source(src), who
}

// LogEntry is one operation in a draft's history.
type LogEntry struct {
	Time   time.Time `json:"time"`
	Op     string    `json:"op"`
	Path   string    `json:"path,omitempty"`
	From   string    `json:"from,omitempty"`
	Paths  []string  `json:"paths,omitempty"`
	Source Source    `json:"source"`
	// By is who within the source made the change, when known: through
	// the mount, the command line of the process (for a process of a
	// draftfs run, the command the run started); the editor; the CLI
	// command.
	By string `json:"by,omitempty"`
}
