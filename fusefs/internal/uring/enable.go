package uring

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// enableParam is the kernel's machine-wide switch: a connection
// negotiates the ring at INIT only while it reads Y.
const enableParam = "/sys/module/fuse/parameters/enable_uring"

// Enabled says whether the running kernel accepts ring registrations
// from new connections.
func Enabled() bool {
	b, err := os.ReadFile(enableParam)
	return err == nil && strings.TrimSpace(string(b)) == "Y"
}

// holdersFile records, under an flock of its own, the switch's value
// before the first holder and one line per process holding it on.
const (
	holdersLock = "/run/draftfs-uring.lock"
	holdersFile = "/run/draftfs-uring.holders"
)

// HoldEnabled turns the switch on until release, for tests (draftfs
// itself never changes it). Test processes run at once and hold it
// together: the value found before the first is put back by the last
// to release, and holders that died without releasing are dropped. It
// needs root.
func HoldEnabled() (release func(), err error) {
	if _, err := os.Stat(enableParam); err != nil {
		return nil, fmt.Errorf("fuse over io_uring: %w (kernel older than 6.14 or fuse built without it)", err)
	}
	me := strconv.Itoa(os.Getpid())
	err = withHolders(func(old string, holders []string) (string, []string, error) {
		if len(holders) == 0 {
			b, err := os.ReadFile(enableParam)
			if err != nil {
				return "", nil, err
			}
			old = strings.TrimSpace(string(b))
			if err := os.WriteFile(enableParam, []byte("Y"), 0); err != nil {
				return "", nil, fmt.Errorf("fuse over io_uring: set %s: %w", enableParam, err)
			}
		}
		return old, append(holders, me), nil
	})
	if err != nil {
		return nil, err
	}
	return func() {
		withHolders(func(old string, holders []string) (string, []string, error) {
			if i := slices.Index(holders, me); i >= 0 {
				holders = slices.Delete(holders, i, i+1)
			}
			if len(holders) == 0 {
				os.WriteFile(enableParam, []byte(old), 0)
			}
			return old, holders, nil
		})
	}, nil
}

// withHolders calls fn with the recorded value and the holders still
// alive, under the lock, and records what it returns. When every holder
// died without releasing, the value is put back first.
func withHolders(fn func(old string, holders []string) (string, []string, error)) error {
	lf, err := os.OpenFile(holdersLock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("fuse over io_uring: %w", err)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("fuse over io_uring: lock %s: %w", holdersLock, err)
	}
	var old string
	var holders []string
	if data, err := os.ReadFile(holdersFile); err == nil {
		lines := strings.Fields(string(data))
		if len(lines) > 0 {
			old = lines[0]
			for _, pid := range lines[1:] {
				if n, err := strconv.Atoi(pid); err == nil && unix.Kill(n, 0) != unix.ESRCH {
					holders = append(holders, pid)
				}
			}
		}
	}
	if len(holders) == 0 && old != "" {
		os.WriteFile(enableParam, []byte(old), 0)
	}
	old, holders, err = fn(old, holders)
	if err != nil {
		return err
	}
	if len(holders) == 0 {
		return os.Remove(holdersFile)
	}
	data := old + "\n" + strings.Join(holders, "\n") + "\n"
	if err := os.WriteFile(holdersFile+".tmp", []byte(data), 0o600); err != nil {
		return err
	}
	return os.Rename(holdersFile+".tmp", holdersFile)
}
