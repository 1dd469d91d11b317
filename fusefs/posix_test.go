//go:build linux

package fusefs

import (
	"sort"
	"testing"

	"github.com/hanwen/go-fuse/v2/posixtest"
)

// TestPosix runs go-fuse's POSIX conformance suite against the mount,
// each test on a fresh mount of an empty workspace.
func TestPosix(t *testing.T) {
	names := make([]string, 0, len(posixtest.All))
	for name := range posixtest.All {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if name == "FcntlFlockLocksFile" {
				// It expects F_SETLK on two descriptors of one process
				// to conflict, as OFD locks would; POSIX locks of one
				// process never do, on ext4 as here (the kernel keeps
				// the locks of the mount itself).
				t.Skip("expects OFD lock semantics from F_SETLK; a local disk gives POSIX ones")
			}
			m := testMount(t, mountOptions{})
			posixtest.All[name](t, m.mnt)
		})
	}
}
