//go:build linux

package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/draftfs/draftfs/daemon/mounts"
	"github.com/draftfs/draftfs/fusefs"
)

// unmountWait is how long Close waits for a busy mount's users to leave
// after detaching it, before closing the engine under it.
const unmountWait = 5 * time.Second

// Mountpoint is where draft is mounted, "" when it is not.
func (d *Daemon) Mountpoint(draft string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if m := d.mounts[draft]; m != nil {
		return m.srv.Mountpoint()
	}
	return ""
}

// Mount mounts the merged view of draft at dir ("": STATE/mnt/DRAFT)
// and returns where. A draft already mounted is not mounted again: its
// mount point is returned.
func (d *Daemon) Mount(draft, dir string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return "", errors.New("the daemon is stopping")
	}
	if m := d.mounts[draft]; m != nil {
		return m.srv.Mountpoint(), nil
	}
	dr, err := d.ws.Draft(draft)
	if err != nil {
		return "", err
	}
	main := dir != ""
	if dir == "" {
		dir = filepath.Join(d.opts.StateDir, "mnt", draft)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", err
	}
	// Before anything is created: a mount point in the workspace is
	// refused without making its parents there.
	if err := mounts.CheckPlacement(dir, d.ws.Root()); err != nil {
		return "", err
	}
	created, err := prepareMountpoint(dir)
	if err != nil {
		return "", err
	}
	if w := hides(dir); w != "" {
		d.opts.Logf("warning: %s: the mount hides it until unmounted", w)
	}
	srv, err := fusefs.Mount(dir, dr, fusefs.Options{AllowOther: d.opts.AllowOther, Passthrough: d.opts.Passthrough, IOURing: d.opts.IOURing, Debug: d.opts.Debug, Logf: d.opts.Logf, StateDir: d.opts.StateDir, Author: d.authors.of})
	if err != nil {
		if created {
			os.Remove(dir)
		}
		return "", err
	}
	m := &mount{srv: srv, created: created, main: main}
	d.mounts[draft] = m
	go d.watchMount(draft, m)
	return dir, nil
}

// hides says what a mount at dir would hide: another mount there (a
// draftfs one named so), or the entries of a non-empty directory; ""
// when nothing.
func hides(dir string) string {
	if fstype := mountedAt(dir); fstype != "" {
		if strings.Contains(fstype, "draftfs") {
			return dir + " is already a draftfs mount (draftfs unmount " + dir + " ends it)"
		}
		return fmt.Sprintf("%s is already a mount point (%s)", dir, fstype)
	}
	f, err := os.Open(dir)
	if err != nil {
		return ""
	}
	defer f.Close()
	names, _ := f.Readdirnames(3)
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("%s is not empty (%s%s)", dir, strings.Join(names[:min(len(names), 2)], ", "), map[bool]string{true: ", ...", false: ""}[len(names) > 2])
}

// mountedAt is the file system type of the mount at dir ("fuse.draftfs"
// say), "" when dir is no mount point.
func mountedAt(dir string) string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	fstype := ""
	for _, line := range strings.Split(string(data), "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER
		f := strings.Fields(line)
		if len(f) < 5 || unescapeMount(f[4]) != dir {
			continue
		}
		for i, x := range f {
			if x == "-" && i+2 < len(f) {
				fstype = f[i+1] + " " + f[i+2] // the last mount there is on top
			}
		}
	}
	return fstype
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline
// and backslash.
func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// prepareMountpoint makes dir usable as a mount point: it unmounts a
// draftfs mount whose daemon died there and creates dir when missing
// (reporting that it did).
func prepareMountpoint(dir string) (created bool, err error) {
	_, err = os.Stat(dir)
	if errors.Is(err, syscall.ENOTCONN) || errors.Is(err, syscall.ECONNABORTED) {
		if uerr := mounts.Unmount(dir); uerr != nil {
			return false, fmt.Errorf("%s is a mount whose server died and cannot be unmounted: %w", dir, uerr)
		}
		_, err = os.Stat(dir)
	}
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, fmt.Errorf("create mount point: %w", err)
		}
		return true, nil
	}
	return false, err
}

// watchMount forgets a mount that went away from outside; losing the
// main one ends the daemon.
func (d *Daemon) watchMount(draft string, m *mount) {
	m.srv.Wait()
	d.mu.Lock()
	gone := d.mounts[draft] == m
	if gone {
		delete(d.mounts, draft)
	}
	d.mu.Unlock()
	if !gone {
		return // unmounted by Close
	}
	d.opts.Logf("%s was unmounted", m.srv.Mountpoint())
	if m.created {
		os.Remove(m.srv.Mountpoint())
	}
	if m.main {
		close(d.done)
	}
}

// unmount unmounts m and waits for its server to stop, at most
// unmountWait when it was busy and had to be detached.
func (d *Daemon) unmount(m *mount) error {
	err := m.srv.Unmount()
	if err != nil && !errors.Is(err, mounts.ErrDetached) {
		return err
	}
	waited := make(chan struct{})
	go func() {
		m.srv.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-time.After(unmountWait):
		d.opts.Logf("%s is still in use; detached", m.srv.Mountpoint())
	}
	if m.created {
		os.Remove(m.srv.Mountpoint())
	}
	if errors.Is(err, mounts.ErrDetached) {
		d.opts.Logf("%v", err)
	}
	return nil
}
