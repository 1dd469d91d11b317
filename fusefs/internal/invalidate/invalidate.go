//go:build linux

// Package invalidate drops what the kernel caches of a FUSE mount's
// tree when the view changed outside the mount: an editor buffer push,
// an ACP or MCP write, a commit, a discard, an undo, a change on disk.
// It decides, for each change on the workspace's feed, which of the
// kernel's attributes, pages, entries (failed lookups included) and
// listings the change concerns, and tells the kernel through go-fuse's
// notifications. It is FUSE-specific, so it is not the engine's, and it
// serves no request, so it is not the adapter's: package fusefs runs it
// on the feed's consumer goroutine, and calls it where a request
// changed a name the kernel cannot know of.
//
// # Directories
//
// Dropping a directory's entry unhashes it in the kernel even while a
// process has it as its working directory, and getcwd there then fails
// with ENOENT until something looks the name up again. So a directory
// that its path still names keeps its entry, and only its attributes
// and listing, and its parent's, are dropped: the same identity a
// lookup would give it, or a number moved between the draft's range
// and the disk's ([nodes.Renumbered]). Files are not looked at: their
// entries are dropped unasked, as that costs the invalidation no lookup
// in the engine. go-fuse has no way to send FUSE_EXPIRE_ONLY (expire,
// do not unhash), which would let this check go.
//
// # Locking
//
// Cache's lock guards only the directories Flush is to drop, never
// held while it notifies. Its methods send kernel notifications, so
// they must not be called with a lock a FUSE handler needs (go-fuse
// documents the deadlock); an entry notification waits for the
// listings being read in its directory.
package invalidate

import (
	"io/fs"
	"strings"
	"sync"

	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/draftfs/draftfs/fusefs/internal/nodes"
	"github.com/draftfs/draftfs/overlay"
)

// Cache is what the kernel caches of one mount's tree, as far as the
// server can drop it. Its exported fields are set before the first
// call, then read only.
type Cache struct {
	Root  *gofs.Inode // the mount's root node
	Draft string      // the draft the mount shows
	// Lstat describes what a path of the view holds now.
	Lstat func(key string) (fs.FileInfo, error)
	// Stable is the identity a lookup gives fi's object now.
	Stable func(fi fs.FileInfo) gofs.StableAttr
	// Moved records that a rename made elsewhere moved node in to key
	// in go-fuse's tree.
	Moved func(in *gofs.Inode, key string)

	mu sync.Mutex
	// dirs are the directories whose attributes and listings the
	// changes applied since the last Flush drop.
	dirs []*gofs.Inode
}

// Apply invalidates what the kernel caches of one change, but for the
// attributes and listings of the directories it changes, which Flush
// drops: a commit of 10,000 files in 100 directories drops each of them
// once, not 100 times (every notification is a write to the kernel).
func (k *Cache) Apply(c overlay.Change) {
	if c.Overflow {
		k.All()
	}
	if c.Draft != "" && c.Draft != k.Draft {
		return // another draft's view
	}
	if c.Draft != "" && c.Source == overlay.SourceMount {
		return // made through the mount: the kernel saw it
	}
	switch c.Kind {
	case overlay.ChangeWrite, overlay.ChangeAttr:
		k.content(c.Path)
	case overlay.ChangeRename:
		k.entry(c.From, k.later)
		k.entry(c.Path, k.later)
		k.move(c.From, c.Path)
	default:
		// Creates, removals, commits, discards, undos, buffers and
		// disk changes may change what a name denotes.
		k.entry(c.Path, k.later)
	}
}

// Flush drops the attributes and listings of the directories the
// changes applied since the last Flush changed, each once. They are
// dropped after the entries: NotifyEntry waits for the listings being
// read in the directory, so the listings dropped after it are any read
// before the change.
func (k *Cache) Flush() {
	k.mu.Lock()
	dirs := k.dirs
	k.dirs = nil
	k.mu.Unlock()
	if len(dirs) == 0 {
		return // a batch of the mount's own changes
	}
	seen := make(map[*gofs.Inode]bool, len(dirs))
	for _, d := range dirs {
		if !seen[d] {
			seen[d] = true
			d.NotifyContent(0, 0)
		}
	}
}

// later has Flush drop dir's attributes and listing.
func (k *Cache) later(dir *gofs.Inode) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dirs = append(k.dirs, dir)
}

// content drops the kernel's attributes and pages of key's node (a
// directory's: its listing).
func (k *Cache) content(key string) {
	in := nodes.At(k.Root, key)
	if in == nil {
		return
	}
	in.NotifyContent(0, 0)
}

// Entry drops the kernel's entry for key (so the next access looks it
// up again), the node's attributes and pages, and the parent's
// attributes and listing. A directory that key still names keeps its
// entry (see keepsEntry).
func (k *Cache) Entry(key string) {
	k.entry(key, func(dir *gofs.Inode) { dir.NotifyContent(0, 0) })
}

// entry is Entry, with the parent's attributes and listing dropped by
// dirChanged.
func (k *Cache) entry(key string, dirChanged func(*gofs.Inode)) {
	in := nodes.At(k.Root, key)
	if in != nil {
		in.NotifyContent(0, 0)
	}
	if key == "" {
		return
	}
	if in != nil && k.keepsEntry(in, key) {
		if _, parent := in.Parent(); parent != nil {
			dirChanged(parent)
		}
		return
	}
	// The kernel may hold a failed lookup of the path's first element
	// below the deepest directory it knows (a change may create several
	// levels at once). NotifyEntry waits for the listings being read in
	// the directory, so the listing dropped after it drops any listing
	// read before the change.
	p, rest := nodes.Deepest(k.Root, key)
	name, _, _ := strings.Cut(rest, "/")
	p.NotifyEntry(name)
	dirChanged(p)
}

// move follows a rename made elsewhere in go-fuse's tree, so nodes
// still open under the old name keep a path that names them. A node at
// the new name stays: the kernel may still send it requests, which its
// path then answers with ESTALE (a look-up again), not with the ENOENT
// of a node that lost its name.
func (k *Cache) move(from, to string) {
	fp, fname := nodes.Split(from)
	tp, tname := nodes.Split(to)
	src, dst := nodes.At(k.Root, fp), nodes.At(k.Root, tp)
	if src == nil || dst == nil {
		return
	}
	c := src.GetChild(fname)
	if c == nil {
		return
	}
	if src.MvChild(fname, dst, tname, false) {
		k.Moved(c, to)
	}
}

// All drops everything the kernel caches of the nodes go-fuse holds:
// after a feed overflow nothing else is known.
func (k *Cache) All() {
	type known struct {
		in  *gofs.Inode
		key string
	}
	todo := []known{{k.Root, ""}}
	for len(todo) > 0 {
		kn := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		kn.in.NotifyContent(0, 0)
		for name, ch := range kn.in.Children() {
			key := name
			if kn.key != "" {
				key = kn.key + "/" + name
			}
			if !k.keepsEntry(ch, key) {
				kn.in.NotifyEntry(name)
			}
			todo = append(todo, known{ch, key})
		}
	}
}

// keepsEntry says whether the kernel may keep its entry for key, the
// name of directory node in: key still names in's directory, as a
// lookup would answer, or a directory whose number moved between the
// draft's range and the disk's (see the package documentation,
// Directories).
func (k *Cache) keepsEntry(in *gofs.Inode, key string) bool {
	if !in.IsDir() {
		return false
	}
	fi, err := k.Lstat(key)
	if err != nil || !fi.IsDir() {
		return false
	}
	return k.Stable(fi) == in.StableAttr() || nodes.Renumbered(in.StableAttr().Ino, nodes.Ino(fi))
}
