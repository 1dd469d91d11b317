//go:build linux

package mounts

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// RaiseReadahead raises the read-ahead window of the mount on device
// dev (its backing device info in sysfs) to kib KiB, when it is
// smaller. Only root may; otherwise, or where sysfs is not mounted, the
// kernel's default stays.
func RaiseReadahead(dev uint64, kib int) {
	p := fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", unix.Major(dev), unix.Minor(dev))
	b, err := os.ReadFile(p)
	if err != nil {
		return
	}
	if cur, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || cur >= kib {
		return
	}
	os.WriteFile(p, []byte(strconv.Itoa(kib)), 0)
}
