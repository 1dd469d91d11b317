//go:build linux

package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/protocol/control"
)

// ErrRunning: another daemon serves the workspace.
var ErrRunning = control.ErrRunning

// lockFile is the daemon lock of a state directory.
const lockFile = "daemon.lock"

// lock takes the daemon lock of stateDir and records who holds it (pid
// and command), or says who does.
func lock(stateDir, command string) (*os.File, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	p := filepath.Join(stateDir, lockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("daemon lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			holder, _ := os.ReadFile(p)
			who := strings.TrimSpace(string(holder))
			if who == "" {
				who = "another process"
			}
			return nil, fmt.Errorf("%w: %s", ErrRunning, who)
		}
		return nil, fmt.Errorf("daemon lock %s: %w", p, err)
	}
	if err := f.Truncate(0); err == nil {
		fmt.Fprintf(f, "pid %d (draftfs %s)\n", os.Getpid(), command)
	}
	return f, nil
}
