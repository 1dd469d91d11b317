//go:build linux

// Package mounts reads and changes the mount table for draftfs mounts,
// apart from serving them (package fusefs): which draftfs mount a
// directory lies in and which workspace and draft it shows ([FindView]),
// unmounting one, also one whose server died ([Unmount]), what keeps
// this process from mounting ([CheckUserMount]) and where a mount point
// may not be ([CheckPlacement]); and a mount's read-ahead window
// ([RaiseReadahead]).
package mounts
