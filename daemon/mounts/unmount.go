//go:build linux

package mounts

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrDetached: the mount was busy, so it was detached lazily: it is gone
// from the namespace but processes still using it keep it alive until
// they close their files and leave it.
var ErrDetached = errors.New("mount busy: detached lazily")

// FsType is a draftfs mount's type in /proc/self/mountinfo: go-fuse's
// "fuse." and the name fusefs.Mount gives.
const FsType = "fuse.draftfs"

// Unmount unmounts the draftfs mount at dir, also one whose server died
// (its mount point then fails with ENOTCONN). Other mounts are refused.
// A busy mount is detached lazily and the error wraps [ErrDetached].
func Unmount(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("mounts: unmount %s: %w", dir, err)
	}
	m, err := findMount(abs)
	if err != nil {
		return err
	}
	if m == nil {
		return fmt.Errorf("mounts: %s is not a mount point", abs)
	}
	if m.fsType != FsType {
		return fmt.Errorf("mounts: %s is a %s mount, not a draftfs one: not unmounting it", abs, m.fsType)
	}
	return UnmountFUSE(abs)
}

// UnmountFUSE unmounts the FUSE mount at dir, whatever serves it:
// directly as root, else with fusermount3. While it is busy it retries
// for a moment (the kernel releases files a little after their last
// close), then detaches lazily, and the error wraps [ErrDetached].
func UnmountFUSE(dir string) error {
	var err error
	for delay := 5 * time.Millisecond; delay < 200*time.Millisecond; delay *= 2 {
		if err = unmountOnce(dir, false); !errors.Is(err, syscall.EBUSY) {
			return err
		}
		time.Sleep(delay)
	}
	if err := unmountOnce(dir, true); err != nil {
		return err
	}
	return fmt.Errorf("mounts: %s: %w; it goes away when the processes using it leave", dir, ErrDetached)
}

func unmountOnce(dir string, lazy bool) error {
	if os.Geteuid() == 0 {
		flags := 0
		if lazy {
			flags = syscall.MNT_DETACH
		}
		if err := syscall.Unmount(dir, flags); err != nil {
			return fmt.Errorf("mounts: unmount %s: %w", dir, err)
		}
		return nil
	}
	bin, err := exec.LookPath("fusermount3")
	if err != nil {
		if bin, err = exec.LookPath("fusermount"); err != nil {
			return fmt.Errorf("mounts: unmount %s: fusermount3 not found (install the fuse3 package)", dir)
		}
	}
	args := []string{"-u"}
	if lazy {
		args = append(args, "-z")
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, append(args, "--", dir)...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "busy") {
			return fmt.Errorf("mounts: unmount %s: %s: %w", dir, msg, syscall.EBUSY)
		}
		return fmt.Errorf("mounts: unmount %s: %s (%v)", dir, msg, err)
	}
	return nil
}

// mountInfo is one line of /proc/self/mountinfo.
type mountInfo struct {
	point  string
	fsType string
	source string
}

// At returns the type of the topmost mount at dir ("fuse.draftfs" for
// draftfs's, see FsType); "" when dir is not a mount point.
func At(dir string) (string, error) {
	m, err := findMount(dir)
	if m == nil {
		return "", err
	}
	return m.fsType, nil
}

// findMount returns the topmost mount at dir, nil when dir is not a
// mount point.
func findMount(dir string) (*mountInfo, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("mounts: read mount table: %w", err)
	}
	var found *mountInfo
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		m, ok := parseMountInfo(sc.Text())
		if ok && m.point == dir {
			found = &m
		}
	}
	return found, nil
}

// parseMountInfo reads a mountinfo line: "36 35 98:0 /mnt1 /mnt/parent
// rw,noatime master:1 - ext3 /dev/root rw".
func parseMountInfo(line string) (mountInfo, bool) {
	pre, post, ok := strings.Cut(line, " - ")
	if !ok {
		return mountInfo{}, false
	}
	f, g := strings.Fields(pre), strings.Fields(post)
	if len(f) < 5 || len(g) < 1 {
		return mountInfo{}, false
	}
	m := mountInfo{point: unescapeMount(f[4]), fsType: g[0]}
	if len(g) > 1 {
		m.source = unescapeMount(g[1])
	}
	return m, true
}

// unescapeMount undoes the kernel's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
