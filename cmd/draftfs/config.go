package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/draftfs/draftfs/daemon/mounts"
	"github.com/draftfs/draftfs/overlay"
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
