// Package mountopts makes the go-fuse options a draftfs mount is served
// with, for fusefs and for memfs (scripts/bench's floor, which must be
// served as a draftfs mount is to measure what its round trips cost).
package mountopts

import (
	"log"
	"os"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// CacheTimeout is how long the kernel keeps entries (failed lookups
// too) and attributes; changes from outside the mount are invalidated
// explicitly.
const CacheTimeout = time.Hour

// MaxRequest is the most data one READ or WRITE carries.
const MaxRequest = 1 << 20

// Options are the options of a mount of type fuse.name whose source is
// fsName, logging to logger (every request with debug).
func Options(name, fsName string, debug bool, logger *log.Logger) *gofs.Options {
	timeout := CacheTimeout
	return &gofs.Options{
		MountOptions: fuse.MountOptions{
			FsName:      fsName,
			Name:        name,
			Options:     []string{"default_permissions"},
			DirectMount: os.Geteuid() == 0,
			// security.capability is asked before every write: go-fuse
			// answers it (none) without asking the file system.
			IgnoreSecurityLabels: true,
			DisableSplice:        true, // replies are built in memory
			MaxWrite:             MaxRequest,
			// The server clears set-id bits on writes, truncates and
			// chowns, so the kernel need not GETATTR first for every
			// chown: one round trip fewer per file untarred.
			ExtraCapabilities: fuse.CAP_HANDLE_KILLPRIV_V2,
			Debug:             debug,
			Logger:            logger,
		},
		EntryTimeout:    &timeout,
		AttrTimeout:     &timeout,
		NegativeTimeout: &timeout,
		NullPermissions: true, // modes are real: 0 means 0
		Logger:          logger,
	}
}
