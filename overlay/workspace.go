//go:build linux

package overlay

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/buffers"
	"github.com/draftfs/draftfs/overlay/beneath"
)

// DefaultDraft is the draft used when none is named.
const DefaultDraft = "main"

// Options configure a Workspace.
type Options struct {
	// Root is the workspace directory; made absolute.
	Root string
	// StateDir holds this workspace's drafts (see [StateDir]).
	StateDir string
	// Buffers are the editor buffers. Nil: a new empty set.
	Buffers *buffers.Set
	// Watch the disk for changes made outside draftfs and publish them on
	// the change feed.
	Watch bool
	// WatchAfter, when set, holds back the walk that watches every
	// directory until it is closed: a daemon's start does not share its
	// CPU with a walk of the whole workspace (GOMAXPROCS is 1 where a
	// mount is served). Changes made before are published as one
	// overflow, as for a walk that had not reached them.
	WatchAfter <-chan struct{}
	// ReadOnly opens the drafts for reading only: nothing in the state
	// directory is created or written (no commit is finished, no log
	// checkpointed), and every change is refused. For commands that
	// only look.
	ReadOnly bool
	// Quiet is how long a draft must see no change before the changes
	// since its last checkpoint make one (a daemon's: DefaultQuiet);
	// 0: never, checkpoints come from BeginStep and Checkpoint only.
	Quiet time.Duration
}

// Workspace is the disk and editor buffers of one project, and its drafts.
type Workspace struct {
	root     string   // read only
	stateDir string   // read only
	disk     afero.Fs // read only
	osDisk   bool     // read only: disk is the OS file system at root
	// dir is the workspace directory when osDisk: every disk operation
	// resolves its path beneath it, following no symlink, so neither a
	// draft nor a swap on disk can make draftfs read or write outside.
	dir      *beneath.Root // read only
	readOnly bool          // read only: see Options.ReadOnly
	quiet    time.Duration // read only: see Options.Quiet
	bufs     *buffers.Set
	feed     feed
	stopBufs func()
	watcher  *watcher
	ahead    *readahead // nil unless osDisk: see readahead.go

	mu     sync.Mutex // protects the following
	drafts map[string]*Draft
	closed bool
}

// StateDir returns the state directory of a workspace below stateRoot:
// one subdirectory per workspace, named after it and a hash of its path.
func StateDir(stateRoot, workspace string) string {
	sum := sha256.Sum256([]byte(workspace))
	name := filepath.Base(workspace)
	if name == "/" || name == "." {
		name = "root"
	}
	return filepath.Join(stateRoot, name+"-"+hex.EncodeToString(sum[:6]))
}

// Open opens a workspace's state, creating it when new, and finishes or
// rolls back any commit a crash interrupted.
func Open(opts Options) (*Workspace, error) { return open(opts, nil) }

// open is Open over disk as the disk layer; nil is the OS file system at
// opts.Root, the only layer outside tests.
func open(opts Options, disk afero.Fs) (*Workspace, error) {
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("overlay: workspace %q: %w", opts.Root, err)
	}
	osDisk := disk == nil
	var dir *beneath.Root
	if osDisk {
		fi, err := os.Stat(root)
		if err != nil {
			return nil, fmt.Errorf("overlay: workspace: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("overlay: workspace %s is not a directory", root)
		}
		if dir, err = beneath.OpenRoot(root); err != nil {
			return nil, fmt.Errorf("overlay: workspace: %w", err)
		}
		disk = beneath.FS{R: dir}
	}
	if opts.StateDir == "" {
		return nil, fmt.Errorf("overlay: no state directory given")
	}
	if !opts.ReadOnly {
		if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
			if dir != nil {
				dir.Close()
			}
			return nil, fmt.Errorf("overlay: state directory: %w", err)
		}
	}
	if opts.Buffers == nil {
		opts.Buffers = buffers.NewSet()
	}
	w := &Workspace{
		root:     root,
		stateDir: opts.StateDir,
		disk:     disk,
		osDisk:   osDisk,
		dir:      dir,
		readOnly: opts.ReadOnly,
		quiet:    opts.Quiet,
		bufs:     opts.Buffers,
		drafts:   map[string]*Draft{},
	}
	if dir != nil && !opts.ReadOnly {
		w.ahead = newReadahead(dir)
	}
	w.stopBufs = w.bufs.Watch(func(ev buffers.Event) {
		w.feed.publish(Change{Path: ev.Path, Kind: ChangeBuffer, Source: SourceEditor})
	})
	if opts.Watch {
		w.watcher, err = newWatcher(w, opts.WatchAfter)
		if err != nil {
			w.stopBufs()
			if w.ahead != nil {
				w.ahead.stop()
			}
			if dir != nil {
				dir.Close()
			}
			return nil, err
		}
	}
	return w, nil
}

// Root is the workspace's absolute path.
func (w *Workspace) Root() string { return w.root }

// Buffers are the workspace's editor buffers.
func (w *Workspace) Buffers() *buffers.Set { return w.bufs }

// Disk is the disk layer.
func (w *Workspace) Disk() afero.Fs { return w.disk }

// Subscribe starts receiving every change to the merged views of the
// workspace's drafts.
func (w *Workspace) Subscribe() *Subscription { return w.feed.subscribe(false) }

// SubscribeFollowed is Subscribe for a subscriber that keeps a view of
// the workspace (a mount's kernel caches): it reports what it applied
// with [Subscription.Applied], and [Workspace.Settle] waits for it.
func (w *Workspace) SubscribeFollowed() *Subscription { return w.feed.subscribe(true) }

// Settle returns once every followed subscriber (see SubscribeFollowed)
// has applied the changes published so far, so that what a caller just
// changed is what every view shows; false if that took longer than
// timeout.
func (w *Workspace) Settle(timeout time.Duration) bool { return w.feed.settle(timeout) }

// ValidDraftName reports whether name can name a draft: a letter or a
// digit, then at most 63 letters, digits, '.', '_' and '-'. Not a
// regexp: one with {0,63} compiled at every draftfs command's start
// cost that start measurably.
func ValidDraftName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// Draft opens the named draft ("" is [DefaultDraft]), creating it when
// new. The same *Draft is returned for the same name until Close.
func (w *Workspace) Draft(name string) (*Draft, error) {
	if name == "" {
		name = DefaultDraft
	}
	if err := CheckDraftName(name); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, fmt.Errorf("overlay: workspace %s is closed", w.root)
	}
	if d, ok := w.drafts[name]; ok {
		return d, nil
	}
	d, err := openDraft(w, name, filepath.Join(w.stateDir, "drafts", name))
	if err != nil {
		return nil, err
	}
	w.drafts[name] = d
	return d, nil
}

// CheckDraftName fails when name cannot name a draft.
func CheckDraftName(name string) error {
	if !ValidDraftName(name) {
		return fmt.Errorf("overlay: draft name %q: use letters, digits, '.', '_' and '-' (at most 64)", name)
	}
	return nil
}

// Drafts lists the drafts that exist in the state directory.
func (w *Workspace) Drafts() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(w.stateDir, "drafts"))
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("overlay: list drafts: %w", err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && ValidDraftName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// Close closes every open draft and stops watching.
func (w *Workspace) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	w.stopBufs()
	if w.watcher != nil {
		w.watcher.close()
	}
	var first error
	for _, d := range w.drafts {
		if err := d.close(); err != nil && first == nil {
			first = err
		}
	}
	if w.ahead != nil {
		w.ahead.stop()
	}
	if w.dir != nil {
		w.dir.Close()
	}
	return first
}
