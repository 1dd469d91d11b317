//go:build linux

package overlay

import "github.com/spf13/afero"

// OpenOn opens a workspace whose disk layer is disk instead of the OS
// file system at opts.Root: for tests of a layer without inode numbers
// or symlinks.
func OpenOn(opts Options, disk afero.Fs) (*Workspace, error) { return open(opts, disk) }
