package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/draftfs/draftfs/daemon"
	"github.com/draftfs/draftfs/daemon/mounts"
	"github.com/draftfs/draftfs/fusefs"
	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/agent"
	"github.com/draftfs/draftfs/protocol/control"
)

// config is what the global flags say.
type config struct {
	workspace string // absolute, symlinks resolved
	stateDir  string // the workspace's own state directory
	draft     string
	// view is the draftfs mount the command was started in (a mount, or
	// the workspace itself inside draftfs run), nil when none: paths
	// below its mount point name the workspace's files.
	view *mounts.View
	// note says which workspace was found, when it is not the current
	// directory (see loadConfig).
	note string
}

// loadConfig resolves the global flags (see loadConfigFor) and says on
// stderr which workspace it found when that is not the directory the
// command was started in.
func loadConfig() (*config, error) {
	cfg, err := loadConfigFor(flagWorkspace, flagDraft, root.PersistentFlags().Changed("draft"))
	if err == nil && cfg.note != "" {
		logf("%s", cfg.note)
	}
	return cfg, err
}

// loadConfigFor resolves a workspace ("": the current directory's) and
// draft. A directory inside a draftfs mount (or inside draftfs run)
// stands for the workspace and draft that mount shows (the draft unless
// draftSet). Otherwise, without an explicit workspace, it is the nearest
// directory from the current one up that draftfs keeps state for (so
// commands work from anywhere inside a workspace, as git's do), stopping
// at a repository's root (a directory with .git), else the current
// directory.
func loadConfigFor(workspace, draft string, draftSet bool) (*config, error) {
	state, err := stateRoot()
	if err != nil {
		return nil, err
	}
	ws := workspace
	if ws == "" {
		if ws, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("current directory: %w", err)
		}
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return nil, err
	}
	if ws, err = filepath.EvalSymlinks(ws); err != nil {
		return nil, fmt.Errorf("workspace: %w (give an existing directory with --workspace)", err)
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("workspace %s is not a directory (give one with --workspace)", ws)
	}
	if v, err := mounts.FindView(ws); err != nil {
		return nil, err
	} else if v != nil {
		return viewConfig(v, draft, draftSet)
	}
	cfg := &config{workspace: ws, draft: draft}
	if workspace == "" {
		cfg.workspace = enclosingWorkspace(state, ws)
		if cfg.workspace != ws {
			cfg.note = "workspace " + cfg.workspace + " (the nearest directory up that draftfs keeps state for)"
		}
	}
	cfg.stateDir = overlay.StateDir(state, cfg.workspace)
	return cfg, nil
}

// stateRoot is where draftfs keeps the state of every workspace.
func stateRoot() (string, error) {
	state := flagState
	if state == "" {
		if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
			state = filepath.Join(x, "draftfs")
		} else {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("no home directory for the state (give one with --state): %w", err)
			}
			state = filepath.Join(home, ".local", "state", "draftfs")
		}
	}
	return filepath.Abs(state)
}

// viewConfig is the configuration of a command started inside the
// draftfs mount v: its daemon says which workspace the mount shows.
func viewConfig(v *mounts.View, draft string, draftSet bool) (*config, error) {
	sock := control.SocketPath(v.StateDir)
	c, err := control.Dial(sock)
	if err != nil {
		return nil, fmt.Errorf("%s is a draftfs mount whose daemon does not answer (%w): unmount it with draftfs unmount %s", v.Mountpoint, err, v.Mountpoint)
	}
	defer c.Close()
	res, err := c.Initialize("draftfs", version())
	if err != nil {
		return nil, fmt.Errorf("the daemon of the draftfs mount %s: %w", v.Mountpoint, err)
	}
	cfg := &config{workspace: res.Workspace, stateDir: v.StateDir, draft: v.Draft, view: v}
	if draftSet {
		cfg.draft = draft
	}
	if v.Mountpoint != cfg.workspace {
		cfg.note = fmt.Sprintf("%s shows workspace %s (draft %s)", v.Mountpoint, cfg.workspace, v.Draft)
	}
	return cfg, nil
}

// enclosingWorkspace is the nearest of dir and its parents that has
// state under stateRoot, or dir. The search stops at a repository's
// root: a project with its own .git is never taken into the state of a
// directory above it.
func enclosingWorkspace(stateRoot, dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if fi, err := os.Stat(overlay.StateDir(stateRoot, d)); err == nil && fi.IsDir() {
			return d
		}
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil || d == filepath.Dir(d) {
			return dir
		}
	}
}

// inWorkspace maps a path seen through the view the command runs in to
// the workspace's own path; other paths are returned as they are.
func (c *config) inWorkspace(p string) string {
	if c.view == nil {
		return p
	}
	rel, err := filepath.Rel(c.view.Mountpoint, p)
	if err != nil || !(rel == "." || filepath.IsLocal(rel)) {
		return p
	}
	return filepath.Join(c.workspace, rel)
}

// socket is the workspace's control socket.
func (c *config) socket() string { return control.SocketPath(c.stateDir) }

// logf writes a daemon's diagnostics to stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "draftfs: "+format+"\n", args...)
}

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
	srv := control.NewServer(ws, control.ServerOptions{Draft: cfg.draft, Version: version(), Logf: logf})
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
