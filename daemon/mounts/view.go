//go:build linux

package mounts

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/draftfs/draftfs/overlay/beneath"
)

// View is what a draftfs mount shows, as the mount table tells it.
type View struct {
	// Mountpoint is where the mount is, as this process sees it: the
	// workspace's own path inside draftfs run.
	Mountpoint string
	// StateDir is the workspace's state directory, where its control
	// socket is found.
	StateDir string
	// Draft is the draft the mount shows.
	Draft string
}

// sourcePrefix starts the source of a draftfs mount in the mount table:
// "draftfs:DRAFT:STATEDIR". Draft names cannot hold a colon.
const sourcePrefix = "draftfs:"

// Source is the source a mount of draft of the workspace whose state
// directory is stateDir gives the mount table, for FindView.
func Source(stateDir, draft string) string {
	if stateDir == "" {
		return "draftfs"
	}
	return sourcePrefix + draft + ":" + stateDir
}

// FindView returns the draftfs mount that dir (absolute, symlinks
// resolved) lies in, nil when the mount nearest above dir is not a
// draftfs one or does not say which workspace it shows.
func FindView(dir string) (*View, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("mounts: read mount table: %w", err)
	}
	var best mountInfo
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m, ok := parseMountInfo(sc.Text())
		// The last of equal mount points is the one on top.
		if ok && beneath.Within(dir, m.point) && len(m.point) >= len(best.point) {
			best = m
		}
	}
	if best.fsType != FsType || !strings.HasPrefix(best.source, sourcePrefix) {
		return nil, nil
	}
	draft, state, ok := strings.Cut(strings.TrimPrefix(best.source, sourcePrefix), ":")
	if !ok || draft == "" || !filepath.IsAbs(state) {
		return nil, nil
	}
	return &View{Mountpoint: best.point, StateDir: state, Draft: draft}, nil
}
