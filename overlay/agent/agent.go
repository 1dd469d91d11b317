// Package agent is the merged view of one draft as the agent-facing
// front ends (ACP, MCP) use it: whole-file reads and writes, listings and
// the draft's status, with every path checked against the workspace and
// every change tagged with the front end's source.
//
// Two implementations: [Local] over an engine opened in this process, and
// the control socket's client (package control) when a daemon owns the
// workspace. Front ends depend only on the interface.
package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/draftfs/draftfs/overlay"
)

// ErrTooLarge: a read asked for more than the caller's limit.
var ErrTooLarge = errors.New("file is larger than the read limit")

// ErrWriteTooLarge: a write is larger than one write can carry (see
// WriteLimiter).
var ErrWriteTooLarge = errors.New("file is larger than the write limit")

// WriteLimiter is a Files whose WriteFile takes at most WriteLimit bytes
// (the control socket's, whose messages are bounded); a front end
// refuses a larger write before copying it.
type WriteLimiter interface {
	WriteLimit() int64
}

// ErrNotRegular: a read of a named pipe, socket or device, which could
// block forever or never end.
var ErrNotRegular = errors.New("not a regular file: only regular files are read")

// Info describes one path of the merged view.
type Info struct {
	Name    string      `json:"name"`
	Size    int64       `json:"size"`
	Mode    fs.FileMode `json:"mode"`
	ModTime time.Time   `json:"mtime"`
}

// IsDir reports whether the path is a directory.
func (i Info) IsDir() bool { return i.Mode.IsDir() }

// Files is a draft's merged view for agent-facing front ends. Keys are
// workspace-relative slash paths as returned by Resolve; "" is the root.
type Files interface {
	// Root is the workspace's absolute path.
	Root() string
	// Resolve turns an agent's path (absolute inside the workspace, or
	// relative to its root) into a key, refusing paths that leave the
	// workspace, also through symlinks (overlay.ErrOutside).
	Resolve(path string) (string, error)
	// Stat follows symlinks; Lstat does not.
	Stat(key string) (Info, error)
	Lstat(key string) (Info, error)
	// ReadDir lists a directory, sorted by name.
	ReadDir(key string) ([]Info, error)
	// ReadFile returns a whole file; ErrTooLarge when it is over limit
	// bytes (limit <= 0: no limit).
	ReadFile(key string, limit int64) ([]byte, error)
	// WriteFile replaces or creates a file, and its parent directories,
	// in the draft.
	WriteFile(key string, data []byte, perm fs.FileMode) error
	MkdirAll(key string) error
	Remove(key string) error
	RemoveAll(key string) error
	Rename(from, to string) error
	// Discard drops the draft's changes at keys.
	Discard(keys []string) error
	Status(keys ...string) ([]overlay.StatusEntry, error)
	Diff(keys ...string) ([]overlay.FileDiff, error)
	// Watch calls fn with the key of every change to the merged view
	// until stop is called; fn must not block.
	Watch(fn func(key string)) (stop func())
}

// Local is Files over a draft opened in this process.
type Local struct {
	d   *overlay.Draft
	fs  *overlay.Fs
	src overlay.Source
}

var _ Files = (*Local)(nil)

// NewLocal returns the merged view of d, logging changes as src.
func NewLocal(d *overlay.Draft, src overlay.Source) *Local {
	return &Local{d: d, fs: d.Fs(src), src: src}
}

// Root implements Files.
func (l *Local) Root() string { return l.d.Workspace().Root() }

// Resolve implements Files.
func (l *Local) Resolve(path string) (string, error) { return l.d.Resolve(path) }

func infoOf(fi fs.FileInfo) Info {
	return Info{Name: fi.Name(), Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime()}
}

// Stat implements Files.
func (l *Local) Stat(key string) (Info, error) {
	fi, err := l.fs.Stat(key)
	if err != nil {
		return Info{}, err
	}
	return infoOf(fi), nil
}

// Lstat implements Files.
func (l *Local) Lstat(key string) (Info, error) {
	fi, err := l.fs.Lstat(key)
	if err != nil {
		return Info{}, err
	}
	return infoOf(fi), nil
}

// ReadDir implements Files.
func (l *Local) ReadDir(key string) ([]Info, error) {
	ents, err := l.fs.ReadDir(key)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(ents))
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue // removed since the listing
		}
		out = append(out, infoOf(fi))
	}
	return out, nil
}

// notRegular is the error for a read of a path that holds fi, not a
// regular file.
func notRegular(key string, fi fs.FileInfo) error {
	return fmt.Errorf("%s is a %s, %w", key, typeName(fi.Mode()), ErrNotRegular)
}

// ReadFile implements Files.
func (l *Local) ReadFile(key string, limit int64) ([]byte, error) {
	f, err := l.fs.Open(key)
	if errors.Is(err, syscall.ENXIO) {
		// The engine opens no named pipe, socket or device (the kernel
		// serves their I/O): say what the path is.
		if fi, serr := l.fs.Stat(key); serr == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
			return nil, notRegular(key, fi)
		}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: key, Err: syscall.EISDIR}
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(key, fi)
	}
	if limit > 0 && fi.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, limit %d: %w", key, fi.Size(), limit, ErrTooLarge)
	}
	r := io.Reader(f)
	if limit > 0 {
		r = io.LimitReader(f, limit+1)
	}
	// Sized from the file, as os.ReadFile does: one allocation, not a
	// doubling series (the size may change meanwhile; ReadFrom copes).
	buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+bytes.MinRead))
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	if limit > 0 && int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: over %d bytes: %w", key, limit, ErrTooLarge)
	}
	return b, nil
}

// typeName names the type of a file that is not regular.
func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// WriteFile implements Files.
func (l *Local) WriteFile(key string, data []byte, perm fs.FileMode) error {
	if err := l.fs.MkdirAll(parentOf(key), 0o755); err != nil {
		return err
	}
	f, err := l.fs.OpenFile(key, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func parentOf(key string) string {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			return key[:i]
		}
	}
	return ""
}

// MkdirAll implements Files.
func (l *Local) MkdirAll(key string) error { return l.fs.MkdirAll(key, 0o755) }

// Remove implements Files.
func (l *Local) Remove(key string) error { return l.fs.Remove(key) }

// RemoveAll implements Files.
func (l *Local) RemoveAll(key string) error { return l.fs.RemoveAll(key) }

// Rename implements Files.
func (l *Local) Rename(from, to string) error { return l.fs.Rename(from, to) }

// Discard implements Files.
func (l *Local) Discard(keys []string) error {
	_, err := l.d.Discard(keys, l.src)
	return err
}

// Status implements Files.
func (l *Local) Status(keys ...string) ([]overlay.StatusEntry, error) { return l.d.Status(keys...) }

// Diff implements Files.
func (l *Local) Diff(keys ...string) ([]overlay.FileDiff, error) { return l.d.Diff(keys...) }

// Watch implements Files.
func (l *Local) Watch(fn func(key string)) func() {
	sub := l.d.Workspace().Subscribe()
	go func() {
		for c := range sub.C {
			if c.Draft != "" && c.Draft != l.d.Name() {
				continue
			}
			if c.From != "" {
				fn(c.From)
			}
			fn(c.Path)
		}
	}()
	return sub.Close
}
