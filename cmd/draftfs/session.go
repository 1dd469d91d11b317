package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/draftfs/draftfs/daemon"
	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/protocol/control"
	"github.com/draftfs/draftfs/protocol/files"
)

// config is what the global flags say.
type config struct {
	workspace string // absolute, symlinks resolved
	stateDir  string // the workspace's own state directory
	draft     string
}

// loadConfig resolves the global flags. Without --workspace the
// workspace is the nearest directory, from the current one up, that
// draftfs keeps state for (so commands work from anywhere inside a
// workspace, as git's do), else the current directory.
func loadConfig() (*config, error) { return loadConfigFor(flagWorkspace, flagDraft) }

// loadConfigFor is loadConfig for a given workspace ("" : the current
// directory's) and draft.
func loadConfigFor(workspace, draft string) (*config, error) {
	state := flagState
	if state == "" {
		if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
			state = filepath.Join(x, "draftfs")
		} else {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, fmt.Errorf("no home directory for the state (give one with --state): %w", err)
			}
			state = filepath.Join(home, ".local", "state", "draftfs")
		}
	}
	state, err := filepath.Abs(state)
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
	if workspace == "" {
		ws = enclosingWorkspace(state, ws)
	}
	return &config{workspace: ws, stateDir: overlay.StateDir(state, ws), draft: draft}, nil
}

// enclosingWorkspace is the nearest of dir and its parents that has
// state under stateRoot, or dir.
func enclosingWorkspace(stateRoot, dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if fi, err := os.Stat(overlay.StateDir(stateRoot, d)); err == nil && fi.IsDir() {
			return d
		}
		if d == filepath.Dir(d) {
			return dir
		}
	}
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

// connect opens a session for the global flags.
func connect() (*session, error) {
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
	ws, err := overlay.Open(overlay.Options{Root: cfg.workspace, StateDir: cfg.stateDir})
	if err != nil {
		return nil, err
	}
	if _, err := ws.Draft(cfg.draft); err != nil {
		ws.Close()
		return nil, err
	}
	srv := control.NewServer(ws, control.ServerOptions{Draft: cfg.draft, Version: version(), Logf: logf})
	c, err = srv.Connect()
	if err != nil {
		srv.Close()
		ws.Close()
		return nil, err
	}
	return &session{Client: c, cfg: cfg, close: func() {
		c.Close()
		srv.Close()
		ws.Close()
	}}, nil
}

// paths turns path arguments into what the daemon takes: absolute
// paths. Relative ones are taken from the current directory when it is
// inside the workspace, else from the workspace's root.
// connectFor is connect (or connectDaemon, with daemonOnly) followed by
// paths(args); the caller closes the session.
func connectFor(args []string, daemonOnly bool) (*session, []string, error) {
	open := connect
	if daemonOnly {
		open = connectDaemon
	}
	s, err := open()
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

func (s *session) paths(args []string) ([]string, error) {
	base := s.cfg.workspace
	if wd, err := os.Getwd(); err == nil {
		if wd, err = filepath.EvalSymlinks(wd); err == nil {
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
		out[i] = a
	}
	return out, nil
}

// startDaemon starts a daemon in this process for a command that needs
// the workspace for a while (run, acp, mcp), so that other commands and
// editors reach it through the socket meanwhile.
func startDaemon(cfg *config, command string) (*daemon.Daemon, error) {
	return daemon.Start(daemon.Options{
		Workspace: cfg.workspace,
		StateDir:  cfg.stateDir,
		Draft:     cfg.draft,
		Watch:     true,
		Command:   command,
		Version:   version(),
		Logf:      logf,
	})
}

// workspaceFiles returns the merged view of the workspace's draft (the
// global flags) for the acp and mcp front ends, every change logged as
// src: over the running daemon's socket, or, when none runs, over an
// engine this process opens and serves on the control socket itself, so
// that `draftfs status`, editors and other commands still reach the
// workspace. Call closeFiles when done.
func workspaceFiles(src overlay.Source) (f files.Files, closeFiles func() error, err error) {
	return workspaceFilesAt(flagWorkspace, flagDraft, src)
}

// workspaceFilesAt is workspaceFiles for a given workspace and draft.
func workspaceFilesAt(workspace, draft string, src overlay.Source) (f files.Files, closeFiles func() error, err error) {
	cfg, err := loadConfigFor(workspace, draft)
	if err != nil {
		return nil, nil, err
	}
	for attempt := 0; ; attempt++ {
		c, err := control.Dial(cfg.socket())
		if err == nil {
			f, err := control.NewFiles(c, cfg.draft, src)
			if err != nil {
				c.Close()
				return nil, nil, err
			}
			return f, c.Close, nil
		}
		if !errors.Is(err, control.ErrNoDaemon) {
			return nil, nil, err
		}
		d, err := startDaemon(cfg, string(src))
		if errors.Is(err, daemon.ErrRunning) && attempt == 0 {
			continue // one started meanwhile: use it
		}
		if err != nil {
			return nil, nil, err
		}
		return files.NewLocal(d.Draft(), src), d.Close, nil
	}
}
