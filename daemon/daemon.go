//go:build linux

package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"github.com/draftfs/draftfs/daemon/mounts"
	"github.com/draftfs/draftfs/fusefs"
	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/protocol/control"
)

// Options configure a daemon.
type Options struct {
	// Workspace is the workspace directory.
	Workspace string
	// StateDir is the workspace's own state directory
	// (overlay.StateDir of the state root).
	StateDir string
	// Draft is the draft the daemon serves by default ("": main).
	Draft string
	// Mount, when set, is where the draft's merged view is mounted; the
	// directory is created if missing (and then removed on Close).
	Mount string
	// AllowOther lets other users use the mounts.
	AllowOther bool
	// Passthrough serves the mounts in passthrough mode
	// (fusefs.Options.Passthrough).
	Passthrough bool
	// IOURing serves the mounts over FUSE over io_uring where the
	// kernel offers it (fusefs.Options.IOURing).
	IOURing bool
	// Debug logs every FUSE request.
	Debug bool
	// Watch the disk for changes made outside draftfs.
	Watch bool
	// Command names what runs the daemon ("serve", "mcp"), for a second
	// daemon's refusal message.
	Command string
	// Version is reported to clients.
	Version string
	// Heavy is called around requests that work in proportion to the
	// draft and bursts of changes (control.ServerOptions.Heavy). Nil:
	// nothing.
	Heavy func(what string) (end func())
	// Fatal ends the process after a bug (a request's handler panicked)
	// may have left the engine's locks held: the daemon has said why and
	// detached its mounts, so that nothing waits on them forever. A
	// draft's journal is recovered at its next open. Nil: the daemon
	// carries on.
	Fatal func()
	// Logf receives the daemon's diagnostics. Nil: discarded.
	Logf func(format string, args ...any)
}

// Daemon is a running daemon.
type Daemon struct {
	opts   Options // read only
	ws     *overlay.Workspace
	draft  *overlay.Draft // the default draft
	srv    *control.Server
	l      *net.UnixListener
	agents *net.UnixListener // the agent socket (control.AgentSocketPath)
	lock   *os.File
	socket string        // read only
	done   chan struct{} // closed when the Options.Mount mount is gone
	// authors names who made each change through the mounts.
	authors *authors

	mu     sync.Mutex // protects the following
	mounts map[string]*mount
	closed bool
}

// mount is a mounted draft.
type mount struct {
	srv     *fusefs.Server
	created bool // the mount point was made for it: remove it after
	main    bool // the Options.Mount mount
}

// Start starts a daemon: it takes the workspace's daemon lock, opens the
// engine, listens on the control socket and mounts Options.Mount. On
// error nothing is left behind.
func Start(opts Options) (*Daemon, error) {
	if opts.Draft == "" {
		opts.Draft = overlay.DefaultDraft
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	d := &Daemon{opts: opts, socket: control.SocketPath(opts.StateDir), done: make(chan struct{}), mounts: map[string]*mount{}, authors: newAuthors()}
	// The walk that watches the workspace's directories starts once the
	// daemon serves (or has been closed, failing): on a large tree it
	// takes much of the one CPU a mount's process uses (serving.Setup),
	// which the start waited for.
	started := make(chan struct{})
	defer close(started)
	ok := false
	defer func() {
		if !ok {
			d.Close()
		}
	}()
	var err error
	if d.lock, err = lock(opts.StateDir, opts.Command); err != nil {
		return nil, fmt.Errorf("%w%s; its socket is %s: stop it first, or use it: every draftfs command talks to it", err, runningMount(d.socket), d.socket)
	}
	d.ws, err = overlay.Open(overlay.Options{Root: opts.Workspace, StateDir: opts.StateDir, Watch: opts.Watch, WatchAfter: started, Quiet: overlay.DefaultQuiet})
	if err != nil {
		return nil, err
	}
	if d.draft, err = d.ws.Draft(opts.Draft); err != nil {
		return nil, err
	}
	d.srv = control.NewServer(d.ws, control.ServerOptions{
		Draft:      opts.Draft,
		Version:    opts.Version,
		Mountpoint: d.Mountpoint,
		Mount:      func(draft string) (string, error) { return d.Mount(draft, "") },
		Daemon:     true,
		Run:        d.Run,
		Who:        ownCommand,
		Heavy:      opts.Heavy,
		Fatal:      d.fatal,
		Logf:       opts.Logf,
	})
	if d.l, err = control.Listen(d.socket); err != nil {
		return nil, err
	}
	go func() {
		if err := d.srv.Serve(d.l); err != nil {
			opts.Logf("control socket: %v", err)
		}
	}()
	if d.agents, err = control.Listen(control.AgentSocketPath(opts.StateDir)); err != nil {
		return nil, err
	}
	go func() {
		if err := d.srv.ServeAgents(d.agents); err != nil {
			opts.Logf("agent socket: %v", err)
		}
	}()
	if opts.Mount != "" {
		if _, err := d.Mount(opts.Draft, opts.Mount); err != nil {
			return nil, err
		}
	}
	ok = true
	return d, nil
}

// runningMount says where the daemon answering on socket mounts its
// draft (", mounted at DIR"), "" when it does not or cannot say.
func runningMount(socket string) string {
	c, err := control.Dial(socket)
	if err != nil {
		return ""
	}
	defer c.Close()
	res, err := c.Initialize("draftfs", "")
	if err != nil || res.Mount == "" {
		return ""
	}
	return ", mounted at " + res.Mount
}

// Socket is the control socket's path.
func (d *Daemon) Socket() string { return d.socket }

// Workspace is the engine.
func (d *Daemon) Workspace() *overlay.Workspace { return d.ws }

// Draft is the daemon's default draft.
func (d *Daemon) Draft() *overlay.Draft { return d.draft }

// Run says that the processes pid starts from now on (pid is a
// `draftfs run`, say), and theirs, make their changes through the
// daemon's mounts as command, until end.
func (d *Daemon) Run(pid int, command []string) (end func()) {
	return d.authors.run(pid, command)
}

// Done is closed when the mount of Options.Mount went away from outside.
func (d *Daemon) Done() <-chan struct{} { return d.done }

// fatal is the control server's Fatal: it says what happened, detaches
// the mounts without waiting for their requests (which may wait on the
// locks the panic left) and calls Options.Fatal.
func (d *Daemon) fatal(err error) {
	if d.opts.Fatal == nil {
		return
	}
	d.opts.Logf("%v. This is a bug; the daemon stops, as it may have left the draft locked. Nothing written is lost: the draft's journal is recovered when draftfs next opens it.", err)
	d.mu.Lock()
	dirs := make([]string, 0, len(d.mounts))
	for _, m := range d.mounts {
		dirs = append(dirs, m.srv.Mountpoint())
	}
	d.mu.Unlock()
	for _, dir := range dirs {
		if err := mounts.UnmountFUSE(dir); err != nil && !errors.Is(err, mounts.ErrDetached) {
			d.opts.Logf("%v", err)
		}
	}
	d.opts.Fatal()
}

// Close unmounts, stops serving, closes the engine and releases the
// lock. A mount still in use is detached lazily.
func (d *Daemon) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	mounts := d.mounts
	d.mounts = map[string]*mount{}
	d.mu.Unlock()

	var errs []error
	if d.srv != nil {
		d.srv.Close()
	}
	for _, l := range []*net.UnixListener{d.l, d.agents} {
		if l != nil {
			l.Close() // when Close came before Serve took it
		}
	}
	for _, m := range mounts {
		if err := d.unmount(m); err != nil {
			errs = append(errs, err)
		}
	}
	d.authors.close()
	if d.ws != nil {
		if err := d.ws.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if d.lock != nil {
		d.lock.Close()
	}
	return errors.Join(errs...)
}
