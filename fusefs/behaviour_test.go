//go:build linux

package fusefs

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/draftfs/draftfs/buffers"
	"github.com/draftfs/draftfs/overlay/vfstest"
)

// TestBehaviourThroughMount runs the engine's behaviour suite
// (overlay/vfstest) on the mount, as programs see it.
func TestBehaviourThroughMount(t *testing.T) {
	vfstest.Run(t, func(t *testing.T, tree map[string]string) vfstest.Env {
		m := testMount(t, mountOptions{watch: true, beforeOpen: func(t testing.TB, root string) { vfstest.WriteTree(t, root, tree) }})
		return mountEnv{t: t, m: m}
	})
}

// mountEnv is a mount as the suite sees it.
type mountEnv struct {
	t testing.TB
	m *mounted
}

func (e mountEnv) FS() vfstest.FS         { return vfstest.OS(e.m.mnt) }
func (e mountEnv) Root() string           { return e.m.mnt }
func (e mountEnv) Disk(key string) string { return filepath.Join(e.m.root, filepath.FromSlash(key)) }
func (e mountEnv) Reopen()                { e.m.remount(e.t) }
func (e mountEnv) Settle() bool           { return e.m.ws.Settle(time.Minute) }
func (e mountEnv) Buffers() *buffers.Set  { return e.m.ws.Buffers() }

// PinsOpenFiles: in passthrough mode a read-only descriptor reads the
// file it opened (README, "The mount's two modes").
func (e mountEnv) PinsOpenFiles() bool { return e.m.passthrough }

// DiskLag: the daemon learns of disk changes by file watching.
func (e mountEnv) DiskLag() time.Duration { return time.Minute }
