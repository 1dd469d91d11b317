package mcp

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/agent"
)

// TestFSError: the one mapper from file-operation errors to messages.
func TestFSError(t *testing.T) {
	plain := errors.New("the socket went away")
	for _, c := range []struct {
		err   error
		op    string
		paths []string
		want  string
	}{
		{&fs.PathError{Op: "open", Path: "/a", Err: syscall.ENOENT}, "open", []string{"/w/a"}, "ENOENT: no such file or directory, open '/w/a'"},
		{fmt.Errorf("wrapped: %w", &fs.PathError{Op: "x", Path: "/a", Err: syscall.ENOTEMPTY}), "rmdir", []string{"/w/d"}, "ENOTEMPTY: directory not empty, rmdir '/w/d'"},
		{syscall.EXDEV, "rename", []string{"/w/a", "/w/b"}, "EXDEV: cross-device link not permitted, rename '/w/a' -> '/w/b'"},
		{fs.ErrExist, "mkdir", []string{"/w/d"}, "EEXIST: file already exists, mkdir '/w/d'"},
		{fmt.Errorf("x: %w", fs.ErrNotExist), "scandir", []string{"/w/d"}, "ENOENT: no such file or directory, scandir '/w/d'"},
		{syscall.EISDIR, "read", nil, "EISDIR: illegal operation on a directory, read"},
		{syscall.ENOTSUP, "open", []string{"/w/a"}, "ENOTSUP: operation not supported, open '/w/a'"},
		{fmt.Errorf("overlay: %w", overlay.ErrOutside), "open", []string{"/w/a"}, "overlay: path is outside the workspace"},
		{fmt.Errorf("a: %w", agent.ErrTooLarge), "open", []string{"/w/a"}, "a: file is larger than the read limit"},
		{errorf("already a message"), "open", []string{"/w/a"}, "already a message"},
		{plain, "open", []string{"/w/a"}, "the socket went away"},
	} {
		got := fsError(c.err, c.op, c.paths...)
		if got.Error() != c.want {
			t.Errorf("fsError(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	if errnoOf(plain) != 0 || errnoOf(nil) != 0 || errnoOf(overlay.ErrOutside) != 0 || errnoOf(syscall.EIO) != syscall.EIO {
		t.Errorf("errnoOf: errors that stand for no errno must give 0, EIO must give EIO")
	}
}
