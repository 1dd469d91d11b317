//go:build linux

package fusefs

import "github.com/draftfs/draftfs/fusefs/internal/uring"

// IOURingOffered says whether the kernel offers FUSE over io_uring to
// new mounts (/sys/module/fuse/parameters/enable_uring is on).
func IOURingOffered() bool { return uring.Enabled() }

// HoldIOURing turns the kernel's FUSE-over-io_uring switch on until
// release, for tests of packages that mount (draftfs itself never
// changes it): test processes running at once share it, and the last
// one puts back the value found before the first. It needs root.
func HoldIOURing() (release func(), err error) { return uring.HoldEnabled() }
