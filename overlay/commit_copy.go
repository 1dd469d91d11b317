//go:build linux

package overlay

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/overlay/beneath"
)

// backup copies what the disk holds at key into the commit's undo
// directory under name: a file with its mode, a symlink, or a whole
// directory tree, less the paths in movedAway.
func (d *Draft) backup(id uint64, key, name string, movedAway map[string]bool) error {
	dst := filepath.Join(d.undoDir(id), "disk", name)
	// What phase A moves away is not there when the op replaces key:
	// undo moves it back from the staging directory.
	skip := func(src string) bool { return movedAway[strings.TrimPrefix(src, "/")] }
	err := copyTree(d.w.disk, diskName(key), afero.NewOsFs(), dst, skip)
	if err != nil {
		return fmt.Errorf("overlay: commit: keep %q for undo: %w", key, err)
	}
	return nil
}

// copyFile copies a state file.
func copyFile(src, dst string) error {
	return copyTree(afero.NewOsFs(), src, afero.NewOsFs(), dst, nil)
}

// copyTree copies a file, symlink or directory tree between file systems,
// keeping modes, mtimes and, as far as the caller may, owners; what is
// below src and skip (if set) reports is left out.
func copyTree(from afero.Fs, src string, to afero.Fs, dst string, skip func(src string) bool) error {
	fi, err := lstatDisk(from, strings.TrimPrefix(src, "/"))
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		r, ok := from.(afero.LinkReader)
		l, ok2 := to.(afero.Linker)
		if !ok || !ok2 {
			return fmt.Errorf("symlinks unsupported")
		}
		t, err := r.ReadlinkIfPossible(src)
		if err != nil {
			return err
		}
		if err := l.SymlinkIfPossible(t, dst); err != nil {
			return err
		}
		return keepOwner(to, dst, fi)
	case fi.Mode()&fs.ModeSocket != 0:
		return nil // a socket is nothing without its listener
	case kindOf(fi.Mode()) == kindSpecial:
		// Never opened: a FIFO's open would wait for a writer.
		var rdev uint64
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			rdev = st.Rdev
		}
		if err := mknodOn(to, dst, fi.Mode(), rdev); err != nil {
			return err
		}
		if err := keepOwner(to, dst, fi); err != nil {
			return err
		}
		return to.Chtimes(dst, fi.ModTime(), fi.ModTime())
	case fi.IsDir():
		if err := to.MkdirAll(dst, fi.Mode().Perm()|0o700); err != nil {
			return err
		}
		f, err := from.Open(src)
		if err != nil {
			return err
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			return err
		}
		for _, n := range names {
			if skip != nil && skip(src+"/"+n) {
				continue
			}
			if err := copyTree(from, src+"/"+n, to, dst+"/"+n, skip); err != nil {
				return err
			}
		}
		if err := keepOwner(to, dst, fi); err != nil { // before the chmod, which a chown may clear
			return err
		}
		if err := to.Chmod(dst, fi.Mode()); err != nil {
			return err
		}
		return to.Chtimes(dst, fi.ModTime(), fi.ModTime())
	}
	in, err := from.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := to.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := keepOwner(to, dst, fi); err != nil { // before the chmod, which a chown may clear
		return err
	}
	if err := to.Chmod(dst, fi.Mode()); err != nil {
		return err
	}
	return to.Chtimes(dst, fi.ModTime(), fi.ModTime())
}

// keepOwner gives dst, not following a symlink, the owner of the object
// fi describes. Only root may give away files: for anyone else the copy
// keeps its maker's, who owned what they could back up anyway.
func keepOwner(to afero.Fs, dst string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	var err error
	switch v := to.(type) {
	case beneath.FS: // its Chown does not follow a final symlink
		err = v.Chown(dst, int(st.Uid), int(st.Gid))
	case *afero.OsFs:
		err = os.Lchown(dst, int(st.Uid), int(st.Gid))
	}
	if errors.Is(err, fs.ErrPermission) && os.Geteuid() != 0 {
		return nil
	}
	return err
}
