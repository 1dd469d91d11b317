//go:build linux

package fusefs

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/draftfs/draftfs/daemon/mounts"
	"github.com/draftfs/draftfs/fusefs/internal/invalidate"
	"github.com/draftfs/draftfs/fusefs/internal/mountopts"
	"github.com/draftfs/draftfs/fusefs/internal/nodes"
	"github.com/draftfs/draftfs/fusefs/internal/noopendir"
	"github.com/draftfs/draftfs/fusefs/internal/passthrough"
	"github.com/draftfs/draftfs/fusefs/internal/uring"
	"github.com/draftfs/draftfs/overlay"
)

// Options configure a mount.
type Options struct {
	// AllowOther lets other users use the mount (mount option
	// allow_other; for non-root users it needs user_allow_other in
	// /etc/fuse.conf).
	AllowOther bool
	// Passthrough keeps opens, so that the kernel reads files opened
	// read-only straight from their disk or draft file (FUSE passthrough:
	// Linux 6.9+, CAP_SYS_ADMIN). It costs a request per open and close,
	// which the default mode saves; where the kernel refuses, the mount
	// falls back to the default mode. See the package documentation.
	Passthrough bool
	// Debug logs every FUSE request and reply.
	Debug bool
	// Logf receives diagnostics; nil: the standard logger.
	Logf func(string, ...any)
	// StateDir is the workspace's state directory; the mount table
	// names it and the draft as the mount's source, so that commands run
	// inside the mount find the workspace it shows (see [mounts.FindView]).
	StateDir string
	// IOURing serves the mount's requests over FUSE over io_uring when
	// the kernel offers it (Linux 6.14+, enabled by root in
	// /sys/module/fuse/parameters/enable_uring) and Debug is off;
	// otherwise it serves over /dev/fuse, and where registering the
	// ring fails it says so in its log. Forgets, interrupts and
	// notifications stay on /dev/fuse.
	IOURing bool
	// Author names who made a change from the pid of the request (the
	// caller's thread, in the mount's pid namespace): the log records it
	// as the change's By (overlay.Source.By). It must be cheap after a
	// process's first request. Nil, or "": the change is by the mount.
	Author func(pid uint32) string
}

// Server is a mounted merged view.
type Server struct {
	d          *overlay.Draft          // read only
	fsys       *overlay.Fs             // read only
	author     func(pid uint32) string // read only: Options.Author
	mountpoint string                  // read only
	root       *node                   // read only
	fuse       *fuse.Server            // read only once Mount returns
	sub        *overlay.Subscription
	logf       func(string, ...any) // read only
	uid, gid   uint32               // read only: the server's own ids
	done       chan struct{}        // closed when the mount is gone and the feed drained

	// Passthrough mode (see passthrough.go).
	passthrough bool // read only: opens are served
	ring        bool // read only once Mount returns: requests come over io_uring
	pt          passthrough.Mount
	// retrying: opens answered ESTALE that the kernel is retrying (see
	// moveAway)
	retrying passthrough.Retries
	opening  sync.Map // request's cancel channel → *openFile being opened
	// writing: cancel channel of a WRITE request being served → its
	// *fuse.WriteIn, when the node's Write needs what go-fuse does not
	// pass it (see noteWrite)
	writing sync.Map
	files   sync.Map // file handle number → *openFile

	nodes nodes.Table[*node] // which node stands for which object
	// forgets: held for writing while a FORGET is served, for reading
	// while a request that gives the kernel nodes is (see rawFS.Forget)
	forgets  sync.RWMutex
	listings listings         // listings read on by the next requests
	cache    invalidate.Cache // read only once Mount set it up
}

// Mount serves d's merged view at mountpoint, an existing directory
// outside the workspace, with every change logged as
// [overlay.SourceMount]. It returns once the mount answers.
func Mount(mountpoint string, d *overlay.Draft, opts Options) (*Server, error) {
	if os.Geteuid() != 0 {
		if err := mounts.CheckUserMount(); err != nil {
			return nil, err
		}
	}
	mp, err := filepath.Abs(mountpoint)
	if err != nil {
		return nil, fmt.Errorf("fusefs: mount point %s: %w", mountpoint, err)
	}
	if err := checkMountpoint(mp, d.Workspace().Root()); err != nil {
		return nil, err
	}
	s := &Server{
		d:           d,
		fsys:        d.Fs(overlay.SourceMount),
		author:      opts.Author,
		mountpoint:  mp,
		logf:        opts.Logf,
		passthrough: opts.Passthrough,
		uid:         uint32(os.Getuid()),
		gid:         uint32(os.Getgid()),
		done:        make(chan struct{}),
	}
	if s.logf == nil {
		s.logf = log.Printf
	}
	rootInfo, err := s.fsys.Lstat("")
	if err != nil {
		return nil, fmt.Errorf("fusefs: workspace root: %w", err)
	}
	s.root = &node{srv: s}
	s.cache = invalidate.Cache{
		Root:   &s.root.Inode,
		Draft:  d.Name(),
		Lstat:  s.fsys.Lstat,
		Stable: s.nodes.Stable,
		Moved:  func(in *gofs.Inode, key string) { in.Operations().(*node).SetKey(key) },
	}
	// The server clears set-id bits itself (killPriv), as the options'
	// HANDLE_KILLPRIV_V2 has it; "draftfs" is mounts.FsType's.
	fopts := mountopts.Options("draftfs", mounts.Source(opts.StateDir, d.Name()), opts.Debug, log.New(logWriter(s.logf), "", 0))
	fopts.AllowOther = opts.AllowOther
	fopts.RootStableAttr = &gofs.StableAttr{Ino: nodes.Ino(rootInfo)}
	// Subscribe before serving, so no change after the first request
	// is missed.
	s.sub = d.Workspace().SubscribeFollowed()
	raw := rawFS{noopendir.FS{RawFileSystem: gofs.NewNodeFS(s.root, fopts)}, s}
	dev, mountArg, err := uring.PrepareMount(mp, &fopts.MountOptions, opts.IOURing)
	if err != nil {
		s.sub.Close()
		return nil, fmt.Errorf("fusefs: mount %s: %w", mp, err)
	}
	srv, err := fuse.NewServer(raw, mountArg, &fopts.MountOptions)
	if err != nil {
		s.sub.Close()
		if dev >= 0 {
			mounts.UnmountFUSE(mp)
		}
		return nil, fmt.Errorf("fusefs: mount %s: %w", mp, err)
	}
	s.fuse = srv
	s.pt.Kernel, s.pt.Logf = srv, s.logf
	// go-fuse answered INIT in NewServer; our transports serve the
	// requests from then on (see uring.ServeGoFuse), go-fuse's srv.Serve
	// only with --debug. The end of serve marks the mount gone: go-fuse
	// closes /dev/fuse after its loops ended (srv.Wait returns before
	// that), ours after their readers and workers.
	serve := srv.Serve
	if dev >= 0 {
		serve, s.ring = uring.ServeGoFuse(srv, dev, raw, &fopts.MountOptions, s.logf)
		if s.ring {
			s.logf("fusefs: io_uring: serving %s over io_uring", mp)
		}
	}
	served, answered, feedDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		serve()
		close(served) // no request is being served
		s.closePins()
		s.sub.Close()
		<-feedDone
		close(s.done)
	}()
	// The feed's invalidations wait until the mount has answered: the
	// kernel starts the root with no permissions (mode 0, owner root)
	// and drops a GETATTR answer that an invalidation of the same inode
	// overtook, so an ordinary user's first access, go-fuse's own poll
	// check in WaitMount, would be refused with EACCES while the
	// workspace root changes.
	go func() {
		defer close(feedDone)
		select {
		case <-answered:
		case <-served:
		}
		s.consume()
	}()
	if err := srv.WaitMount(); err != nil {
		s.Unmount()
		return nil, fmt.Errorf("fusefs: mount %s: %w", mp, err)
	}
	if dev >= 0 {
		// Only once the mount is served (see uring.PollHack).
		if err := uring.PollHack(mp); err != nil {
			s.logf("fusefs: io_uring: %v", err)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(mp, &st); err != nil || st.Ino != nodes.Ino(rootInfo) {
		s.Unmount()
		if err == nil {
			err = fmt.Errorf("it shows inode %d, not the workspace root's %d", st.Ino, nodes.Ino(rootInfo))
		}
		return nil, fmt.Errorf("fusefs: mount %s does not answer: %v", mp, err)
	}
	close(answered)
	mounts.RaiseReadahead(st.Dev, readaheadKiB)
	return s, nil
}

// readaheadKiB is how far the kernel reads ahead of a sequential reader
// of the mount: each READ is a round trip, so a window of the largest
// READ instead of the kernel's 128 KiB default makes cold sequential
// reads faster (figures in the README's Benchmarks section).
const readaheadKiB = mountopts.MaxRequest >> 10

// checkMountpoint refuses a mount point that is not a directory, or lies
// inside the workspace or contains it: the server reads the workspace
// and would read itself.
func checkMountpoint(mp, workspace string) error {
	fi, err := os.Stat(mp)
	if err != nil {
		return fmt.Errorf("fusefs: mount point: %w (create the directory first)", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("fusefs: mount point %s is not a directory", mp)
	}
	return mounts.CheckPlacement(mp, workspace)
}

// Mountpoint is where the view is mounted.
func (s *Server) Mountpoint() string { return s.mountpoint }

// Unmount unmounts the view. A busy mount is detached lazily: the error
// then wraps [mounts.ErrDetached], and [Server.Wait] returns once the last
// process using it left.
func (s *Server) Unmount() error {
	return mounts.UnmountFUSE(s.mountpoint)
}

// Wait returns once the mount is gone.
func (s *Server) Wait() { <-s.done }

// logWriter turns go-fuse's logger output into Logf calls.
type logWriter func(string, ...any)

func (w logWriter) Write(p []byte) (int, error) {
	w("%s", strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// as is the view for a change requested with ctx: made by the process
// behind the request, when Options.Author names it.
func (s *Server) as(ctx context.Context) *overlay.Fs {
	if s.author == nil {
		return s.fsys
	}
	c, ok := fuse.FromContext(ctx)
	if !ok || c.Pid == 0 {
		return s.fsys // the kernel's own (a write-back, a release)
	}
	if who := s.author(c.Pid); who != "" {
		return s.fsys.As(who)
	}
	return s.fsys
}
