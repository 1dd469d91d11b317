package mcp

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/draftfs/draftfs/protocol/mcp/internal/reference"

	"github.com/draftfs/draftfs/overlay/agent"
	"github.com/draftfs/draftfs/overlay/beneath"
)

// newFilePerm is the mode of files the tools create (Node's 0666 under
// the usual umask 022).
const newFilePerm fs.FileMode = 0o644

// checkParent fails as Node's open does when the directory a new file
// goes into is missing or is not a directory.
func (s *Server) checkParent(t target, op string, paths ...string) error {
	if t.key == "" {
		return nil
	}
	info, err := s.f.Stat(path.Dir("/" + t.key)[1:])
	switch {
	case err != nil:
		return fsError(err, op, paths...)
	case !info.IsDir():
		return fsError(syscall.ENOTDIR, op, paths...)
	}
	return nil
}

func (s *Server) writeFile(_ context.Context, a args) (*result, error) {
	t, err := s.validate(a.str("path"))
	if err != nil {
		return nil, err
	}
	data := a.text("content")
	if err := s.checkWriteSize(t, len(data)); err != nil {
		return nil, err
	}
	if err := s.write(t, data); err != nil {
		return nil, err
	}
	return textResult("Successfully wrote to " + a.str("path")), nil
}

// checkWriteSize refuses, before any copy, a write of n bytes larger
// than the view takes in one write.
func (s *Server) checkWriteSize(t target, n int) error {
	l, ok := s.f.(agent.WriteLimiter)
	if !ok || int64(n) <= l.WriteLimit() {
		return nil
	}
	return errorf("File too large to write: %s is %s, over the %s limit for one write (the draftfs daemon's message size)",
		t.abs, reference.FormatSize(int64(n)), reference.FormatSize(l.WriteLimit()))
}

// write replaces or creates a file in the draft; unlike Files.WriteFile
// it does not create missing directories, as the reference cannot.
func (s *Server) write(t target, data []byte) error {
	perm := newFilePerm
	info, err := s.f.Stat(t.key)
	switch {
	case err == nil && info.IsDir():
		return fsError(syscall.EISDIR, "open", t.abs)
	case err == nil:
		perm = info.Mode.Perm()
	default:
		if err := s.checkParent(t, "open", t.abs); err != nil {
			return err
		}
	}
	if err := s.f.WriteFile(t.key, data, perm); err != nil {
		return fsError(err, "open", t.abs)
	}
	return nil
}

func (s *Server) editFile(_ context.Context, a args) (*result, error) {
	t, err := s.validate(a.str("path"))
	if err != nil {
		return nil, err
	}
	b, err := s.readText(t)
	if err != nil {
		return nil, err
	}
	before, after, err := reference.ApplyEdits(string(b), a.edits())
	if err != nil {
		return nil, &toolError{msg: err.Error()}
	}
	out := reference.EditResult(reference.JSText([]byte(reference.UnifiedDiff(t.abs, before, after))))
	if a.boolean("dryRun") || after == before {
		return textResult(out), nil
	}
	// The reference writes the file back with "\n" line ends; a file
	// that used CRLF throughout keeps it here, so the draft's diff shows
	// the edit and not every line.
	if usesCRLF(b) {
		after = strings.ReplaceAll(after, "\n", "\r\n")
	}
	if err := s.write(t, []byte(after)); err != nil {
		return nil, err
	}
	return textResult(out), nil
}

// usesCRLF reports whether every line of b ends with CRLF (and one does).
func usesCRLF(b []byte) bool {
	n := strings.Count(string(b), "\n")
	return n > 0 && strings.Count(string(b), "\r\n") == n
}

func (s *Server) createDirectory(_ context.Context, a args) (*result, error) {
	t, err := s.validate(a.str("path"))
	if err != nil {
		return nil, err
	}
	info, err := s.f.Stat(t.key)
	switch {
	case err == nil && !info.IsDir():
		return nil, fsError(syscall.EEXIST, "mkdir", t.abs)
	case err == nil:
	default:
		if err := s.f.MkdirAll(t.key); err != nil {
			return nil, fsError(err, "mkdir", t.abs)
		}
	}
	return textResult("Successfully created directory " + a.str("path")), nil
}

func (s *Server) moveFile(_ context.Context, a args) (*result, error) {
	return s.transfer(a, "moved", func(src, dst target) error {
		if err := s.f.Rename(src.key, dst.key); err != nil {
			return fsError(err, "rename", src.abs, dst.abs)
		}
		return nil
	})
}

// transfer is move_file and copy_file: both paths must be allowed and
// the destination must not exist yet; op moves or copies, and the answer
// says it was done (verb).
func (s *Server) transfer(a args, verb string, op func(src, dst target) error) (*result, error) {
	src, err := s.validate(a.str("source"))
	if err != nil {
		return nil, err
	}
	dst, err := s.validate(a.str("destination"))
	if err != nil {
		return nil, err
	}
	if _, err := s.f.Lstat(dst.key); err == nil {
		return nil, errorf("Destination already exists: %s", dst.abs)
	}
	if err := op(src, dst); err != nil {
		return nil, err
	}
	return textResult(fmt.Sprintf("Successfully %s %s to %s", verb, a.str("source"), a.str("destination"))), nil
}

func (s *Server) deleteFile(_ context.Context, a args) (*result, error) {
	t, err := s.validateEntry(a.str("path"))
	if err != nil {
		return nil, err
	}
	if slices.Contains(s.allowedDirs(), t.abs) {
		return nil, errorf("Refusing to delete %s: it is an allowed directory", t.abs)
	}
	info, err := s.f.Lstat(t.key)
	if err != nil {
		return nil, fsError(err, "unlink", t.abs)
	}
	op, remove := "unlink", s.f.Remove
	if info.IsDir() {
		op = "rmdir"
		if a.boolean("recursive") {
			remove = s.f.RemoveAll
		}
	}
	if err := remove(t.key); err != nil {
		if errnoOf(err) == syscall.ENOTEMPTY {
			return nil, errorf("ENOTEMPTY: directory not empty, rmdir '%s' (use recursive: true to delete it with everything in it)", t.abs)
		}
		return nil, fsError(err, op, t.abs)
	}
	return textResult(fmt.Sprintf("Successfully deleted %s in the draft (it stays on disk until the user commits; restore_file brings it back)", a.str("path"))), nil
}

func (s *Server) restoreFile(_ context.Context, a args) (*result, error) {
	t, err := s.validateEntry(a.str("path"))
	if err != nil {
		return nil, err
	}
	changes, err := s.f.Status(t.key)
	if err != nil {
		return nil, err
	}
	if len(changes) == 0 {
		return nil, errorf("Nothing to restore: the draft has no changes at %s", t.abs)
	}
	if err := s.f.Discard([]string{t.key}); err != nil {
		return nil, err
	}
	return textResult(fmt.Sprintf("Restored %s: dropped %d draft change(s); it reads again as the user has it", a.str("path"), len(changes))), nil
}

func (s *Server) copyFile(_ context.Context, a args) (*result, error) {
	return s.transfer(a, "copied", func(src, dst target) error {
		if beneath.Within(dst.key, src.key) {
			return errorf("Cannot copy %s into itself (%s)", src.abs, dst.abs)
		}
		info, err := s.f.Stat(src.key)
		if err != nil {
			return fsError(err, "copyfile", src.abs, dst.abs)
		}
		if err := s.checkParent(dst, "copyfile", src.abs, dst.abs); err != nil {
			return err
		}
		return s.copyTree(src, dst, info.IsDir(), info.Mode.Perm())
	})
}

// copyTree copies a file, or a directory and what it holds; symlinks are
// refused, as the view has no way to make one.
func (s *Server) copyTree(src, dst target, dir bool, perm fs.FileMode) error {
	if !dir {
		b, err := s.readFile(src)
		if err != nil {
			return err
		}
		if err := s.f.WriteFile(dst.key, b, perm); err != nil {
			return fsError(err, "copyfile", src.abs, dst.abs)
		}
		return nil
	}
	if err := s.f.MkdirAll(dst.key); err != nil {
		return fsError(err, "mkdir", dst.abs)
	}
	ents, err := s.f.ReadDir(src.key)
	if err != nil {
		return fsError(err, "scandir", src.abs)
	}
	for _, e := range ents {
		if e.Mode.Type() == fs.ModeSymlink {
			return errorf("Cannot copy the symlink %s: copy_file copies files and directories", joinAbs(src.abs, e.Name))
		}
		from := target{abs: joinAbs(src.abs, e.Name), key: joinKey(src.key, e.Name)}
		to := target{abs: joinAbs(dst.abs, e.Name), key: joinKey(dst.key, e.Name)}
		if err := s.copyTree(from, to, e.IsDir(), e.Mode.Perm()); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) appendFile(_ context.Context, a args) (*result, error) {
	t, err := s.validate(a.str("path"))
	if err != nil {
		return nil, err
	}
	var b []byte
	if _, err := s.f.Stat(t.key); err == nil {
		if b, err = s.readFile(t); err != nil {
			return nil, err
		}
	}
	if err := s.write(t, append(b, a.text("content")...)); err != nil {
		return nil, err
	}
	return textResult("Successfully appended to " + a.str("path")), nil
}
