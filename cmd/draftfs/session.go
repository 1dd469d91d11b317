package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/draftfs/draftfs/daemon"
	"github.com/draftfs/draftfs/fusefs"
	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/agent"
	"github.com/draftfs/draftfs/protocol/control"
)

// session is how a command reaches the workspace: the daemon's control
// socket when a daemon runs, else an engine opened for the command alone
// (whose draft lock keeps any other process from writing the draft
// meanwhile). Either way the command speaks the control protocol, so its
// results are the same.
type session struct {
	*control.Client
	cfg    *config
	daemon bool // a daemon answers
	close  func()
}

// access is what a command does to the workspace, which decides how it
// reaches it.
type access int

const (
	// readOnly commands (status, diff, log) never create state or a
	// draft: without state the draft is empty, and an unknown draft is an
	// error naming those that exist.
	readOnly access = iota
	// readWrite commands open (and create) the state when no daemon runs.
	readWrite
	// daemonOnly commands need a daemon (buffers live in it).
	daemonOnly
)

// connect opens a session for the global flags.
func connect(acc access) (*session, error) {
	if acc == daemonOnly {
		return connectDaemon()
	}
	cfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	c, err := control.Dial(cfg.socket())
	if err == nil {
		return &session{Client: c, cfg: cfg, daemon: true, close: func() { c.Close() }}, nil
	}
	if !errors.Is(err, control.ErrNoDaemon) {
		return nil, err
	}
	stateDir, cleanup := cfg.stateDir, func() {}
	if _, err := os.Stat(stateDir); errors.Is(err, fs.ErrNotExist) && acc == readOnly {
		// Nothing was ever recorded here: answer from an empty state
		// that goes away with the command.
		if stateDir, err = os.MkdirTemp("", "draftfs-empty-"); err != nil {
			return nil, err
		}
		cleanup = func() { os.RemoveAll(stateDir) }
	}
	// Read only, the engine writes nothing in the state directory, and
	// works on a full or damaged one as far as it can be read.
	ws, err := overlay.Open(overlay.Options{Root: cfg.workspace, StateDir: stateDir, ReadOnly: acc == readOnly})
	if err != nil {
		cleanup()
		return nil, err
	}
	closeAll := func() {
		ws.Close()
		cleanup()
	}
	if acc == readOnly {
		err = control.CheckDraftExists(ws, cfg.draft)
	}
	if err == nil {
		_, err = ws.Draft(cfg.draft)
	}
	if err != nil {
		closeAll()
		return nil, err
	}
	srv := control.NewServer(ws, control.ServerOptions{Draft: cfg.draft, Version: version(), Heavy: heavyWorkFor, Logf: logf})
	c, err = srv.Connect()
	if err != nil {
		srv.Close()
		closeAll()
		return nil, err
	}
	return &session{Client: c, cfg: cfg, close: func() {
		c.Close()
		srv.Close()
		closeAll()
	}}, nil
}

// connectFor is connect followed by paths(args); the caller closes the
// session.
func connectFor(args []string, acc access) (*session, []string, error) {
	s, err := connect(acc)
	if err != nil {
		return nil, nil, err
	}
	paths, err := s.paths(args)
	if err != nil {
		s.close()
		return nil, nil, err
	}
	return s, paths, nil
}

// paths turns path arguments into what the daemon takes: absolute
// paths of the workspace. Relative ones are taken from the current
// directory when it is inside the workspace (or the view the command
// runs in), else from the workspace's root.
func (s *session) paths(args []string) ([]string, error) {
	base := s.cfg.workspace
	if wd, err := os.Getwd(); err == nil {
		if wd, err = filepath.EvalSymlinks(wd); err == nil {
			wd = s.cfg.inWorkspace(wd)
			if rel, err := filepath.Rel(s.cfg.workspace, wd); err == nil && (rel == "." || filepath.IsLocal(rel)) {
				base = wd
			}
		}
	}
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" {
			return nil, usagef("empty path")
		}
		if !filepath.IsAbs(a) {
			a = filepath.Join(base, a)
		}
		out[i] = s.cfg.inWorkspace(a)
	}
	return out, nil
}

// ioURing says whether the daemon's mounts ask for FUSE over io_uring
// (--io-uring, on by default): where the kernel does not offer it they
// read /dev/fuse, silently unless --io-uring was given.
func ioURing() bool {
	if !flagIOURing {
		return false
	}
	if root.PersistentFlags().Changed("io-uring") {
		switch {
		case !fusefs.IOURingOffered():
			logf("--io-uring: the kernel does not offer FUSE over io_uring (Linux 6.14+; root turns it on with echo Y > /sys/module/fuse/parameters/enable_uring); serving over /dev/fuse")
		case flagDebug:
			logf("--io-uring: off with --debug (requests on the ring are not logged); serving over /dev/fuse")
		}
	}
	return true
}

// startDaemon starts a daemon in this process for a command that needs
// the workspace for a while (run, acp, mcp), so that other commands and
// editors reach it through the socket meanwhile.
func startDaemon(cfg *config, command string) (*daemon.Daemon, error) {
	return daemon.Start(daemon.Options{
		Workspace: cfg.workspace,
		StateDir:  cfg.stateDir,
		Draft:     cfg.draft,
		IOURing:   ioURing(),
		Watch:     true,
		Command:   command,
		Version:   version(),
		Heavy:     heavyWorkFor,
		Fatal:     exitAfterBug,
		Logf:      logf,
	})
}

// stepFunc begins a step of a draft's timeline by an author; run, when
// not nil, is the command this process starts (a draftfs run's, an ACP
// agent's), whose changes through the mount are by it. What it
// returns ends it.
type stepFunc func(a overlay.Author, label string, run []string) (end func())

// clientStep is stepFunc over a daemon's control connection.
func clientStep(c *control.Client, draft string) stepFunc {
	return func(a overlay.Author, label string, run []string) func() {
		end, err := c.BeginStep(draft, a, label, run)
		if err != nil {
			logf("the draft's timeline: %v", err)
			return func() {}
		}
		return func() {
			if _, err := end(); err != nil {
				logf("the draft's timeline: %v", err)
			}
		}
	}
}

// draftStep is stepFunc over the default draft of a daemon running in
// this process.
func draftStep(dm *daemon.Daemon) stepFunc {
	return func(a overlay.Author, label string, run []string) func() {
		end := dm.Draft().BeginStep(a, label)
		endRun := func() {}
		if run != nil {
			endRun = dm.Run(os.Getpid(), run)
		}
		return func() {
			defer endRun()
			if _, err := end(); err != nil {
				logf("the draft's timeline: %v", err)
			}
		}
	}
}

// workspaceFiles returns the merged view of the workspace's draft (the
// global flags) for the acp and mcp front ends, every change logged as
// src: over the running daemon's socket, or, when none runs, over an
// engine this process opens and serves on the control socket itself, so
// that `draftfs status`, editors and other commands still reach the
// workspace. step begins steps of the draft's timeline. Call closeFiles
// when done.
func workspaceFiles(src overlay.Source) (f agent.Files, step stepFunc, closeFiles func() error, err error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, nil, nil, err
	}
	return filesOf(cfg, src)
}

// workspaceFilesAt is workspaceFiles for a given workspace and draft.
func workspaceFilesAt(workspace, draft string, src overlay.Source) (f agent.Files, step stepFunc, closeFiles func() error, err error) {
	cfg, err := loadConfigFor(workspace, draft, true)
	if err != nil {
		return nil, nil, nil, err
	}
	return filesOf(cfg, src)
}

// filesOf is workspaceFiles for cfg.
func filesOf(cfg *config, src overlay.Source) (f agent.Files, step stepFunc, closeFiles func() error, err error) {
	for attempt := 0; ; attempt++ {
		c, err := control.Dial(cfg.socket())
		if err == nil {
			f, err := control.NewFiles(c, cfg.draft, src)
			if err != nil {
				c.Close()
				return nil, nil, nil, err
			}
			return f, clientStep(c, cfg.draft), c.Close, nil
		}
		if !errors.Is(err, control.ErrNoDaemon) {
			return nil, nil, nil, err
		}
		d, err := startDaemon(cfg, string(src))
		if errors.Is(err, control.ErrRunning) && attempt == 0 {
			continue // one started meanwhile: use it
		}
		if err != nil {
			return nil, nil, nil, err
		}
		return agent.NewLocal(d.Draft(), src), draftStep(d), d.Close, nil
	}
}
