package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

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
	created, err := prepareMountpoint(dir)
	if err != nil {
		return "", err
	}
	srv, err := fusefs.Mount(dir, dr, fusefs.Options{AllowOther: d.opts.AllowOther, Passthrough: d.opts.Passthrough, Debug: d.opts.Debug, Logf: d.opts.Logf})
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

// prepareMountpoint makes dir usable as a mount point: it unmounts a
// draftfs mount whose daemon died there and creates dir when missing
// (reporting that it did).
func prepareMountpoint(dir string) (created bool, err error) {
	_, err = os.Stat(dir)
	if errors.Is(err, syscall.ENOTCONN) || errors.Is(err, syscall.ECONNABORTED) {
		if uerr := fusefs.Unmount(dir); uerr != nil {
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
	if err != nil && !errors.Is(err, fusefs.ErrDetached) {
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
	if errors.Is(err, fusefs.ErrDetached) {
		d.opts.Logf("%v", err)
	}
	return nil
}
