//go:build linux

package fusefs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay"
)

func TestErrnoOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		want syscall.Errno
		ok   bool
	}{
		{nil, 0, true},
		{&fs.PathError{Op: "rmdir", Path: "/a", Err: syscall.ENOTEMPTY}, syscall.ENOTEMPTY, true},
		{fmt.Errorf("wrapped: %w", &fs.PathError{Op: "rename", Path: "/a", Err: syscall.EXDEV}), syscall.EXDEV, true},
		{&fs.PathError{Op: "open", Path: "/a", Err: fs.ErrNotExist}, syscall.ENOENT, true},
		{fmt.Errorf("x: %w", fs.ErrExist), syscall.EEXIST, true},
		{fmt.Errorf("x: %w", fs.ErrPermission), syscall.EACCES, true},
		{fmt.Errorf("x: %w", overlay.ErrOutside), syscall.EACCES, true},
		{fmt.Errorf("x: %w", fs.ErrInvalid), syscall.EINVAL, true},
		{fmt.Errorf("x: %w", fs.ErrClosed), syscall.EBADF, true},
		{errors.New("disk on fire"), syscall.EIO, false},
	} {
		got, ok := overlay.ErrnoOf(c.err)
		if got != c.want || ok != c.ok {
			t.Errorf("ErrnoOf(%v) = %v, %v; want %v, %v", c.err, got, ok, c.want, c.ok)
		}
	}
}

func TestMountpointRefused(t *testing.T) {
	requireFuse(t)
	base := t.TempDir()
	root := filepath.Join(base, "ws")
	inside := filepath.Join(root, "sub")
	if err := os.MkdirAll(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	ws, err := overlay.Open(overlay.Options{Root: root, StateDir: filepath.Join(base, "state")})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	d, err := ws.Draft("")
	if err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]string{
		inside:                        "is inside the workspace",
		root:                          "is inside the workspace",
		base:                          "contains the workspace",
		filepath.Join(base, "absent"): "create the directory first",
	} {
		srv, err := Mount(dir, d, Options{})
		if err == nil {
			srv.Unmount()
			t.Errorf("Mount(%s) succeeded", dir)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Mount(%s): %v; want it to say %q", dir, err, want)
		}
	}
}

func TestReadWriteCommit(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{
		"a.txt":     "alpha\n",
		"dir/b.txt": "beta\n",
		"keep.txt":  "keep\n",
	}})
	disk := snapshot(t, m.root)
	mustRead(t, filepath.Join(m.mnt, "a.txt"), "alpha\n")
	mustRead(t, filepath.Join(m.mnt, "dir/b.txt"), "beta\n")

	// O_TRUNC, O_APPEND, O_EXCL, a new directory and a removal.
	if err := os.WriteFile(filepath.Join(m.mnt, "a.txt"), []byte("ALPHA\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(m.mnt, "dir/b.txt"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("more\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := os.OpenFile(filepath.Join(m.mnt, "keep.txt"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, fs.ErrExist) {
		t.Errorf("O_EXCL on an existing file: %v, want EEXIST", err)
	}
	if err := os.Mkdir(filepath.Join(m.mnt, "new"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m.mnt, "new/c.txt"), []byte("gamma\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(m.mnt, "keep.txt")); err != nil {
		t.Fatal(err)
	}

	mustRead(t, filepath.Join(m.mnt, "a.txt"), "ALPHA\n")
	mustRead(t, filepath.Join(m.mnt, "dir/b.txt"), "beta\nmore\n")
	mustRead(t, filepath.Join(m.mnt, "new/c.txt"), "gamma\n")
	if _, err := os.Lstat(filepath.Join(m.mnt, "keep.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("removed file: %v", err)
	}
	want := []string{"added new/c.txt", "deleted keep.txt", "modified a.txt", "modified dir/b.txt"}
	if got := statusPaths(t, m.d); !slices.Equal(got, want) {
		t.Errorf("status %q, want %q", got, want)
	}
	if diff := diffSnapshots(disk, snapshot(t, m.root)); len(diff) > 0 {
		t.Fatalf("disk changed before commit: %v", diff)
	}

	if _, err := m.d.Commit(overlay.CommitOptions{Source: overlay.SourceCLI}); err != nil {
		t.Fatal(err)
	}
	mustRead(t, filepath.Join(m.root, "a.txt"), "ALPHA\n")
	mustRead(t, filepath.Join(m.root, "new/c.txt"), "gamma\n")
	// The committed files are disk files now, under new inode numbers:
	// the mount shows them.
	mustRead(t, filepath.Join(m.mnt, "a.txt"), "ALPHA\n")
	mustRead(t, filepath.Join(m.mnt, "new/c.txt"), "gamma\n")
	if got := statusPaths(t, m.d); len(got) != 0 {
		t.Errorf("status after commit: %q", got)
	}
}

func TestInodesStable(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"f.txt": "one\n", "d/g.txt": "two\n"}})
	diskIno := ino(t, filepath.Join(m.root, "f.txt"))
	if got := ino(t, filepath.Join(m.mnt, "f.txt")); got != diskIno {
		t.Errorf("lower file: ino %d, disk %d", got, diskIno)
	}
	if err := os.WriteFile(filepath.Join(m.mnt, "f.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ino(t, filepath.Join(m.mnt, "f.txt")); got != diskIno {
		t.Errorf("after copy-up: ino %d, want %d", got, diskIno)
	}
	if err := os.Rename(filepath.Join(m.mnt, "f.txt"), filepath.Join(m.mnt, "d/h.txt")); err != nil {
		t.Fatal(err)
	}
	if got := ino(t, filepath.Join(m.mnt, "d/h.txt")); got != diskIno {
		t.Errorf("after rename: ino %d, want %d", got, diskIno)
	}
	dirIno := ino(t, filepath.Join(m.mnt, "d"))
	gIno := ino(t, filepath.Join(m.mnt, "d/g.txt"))
	if err := os.Rename(filepath.Join(m.mnt, "d"), filepath.Join(m.mnt, "e")); err != nil {
		t.Fatal(err)
	}
	if got := ino(t, filepath.Join(m.mnt, "e")); got != dirIno {
		t.Errorf("renamed directory: ino %d, want %d", got, dirIno)
	}
	if got := ino(t, filepath.Join(m.mnt, "e/g.txt")); got != gIno {
		t.Errorf("file in renamed directory: ino %d, want %d", got, gIno)
	}
	mustRead(t, filepath.Join(m.mnt, "e/h.txt"), "changed\n")

	// readdir's d_ino agrees with lstat's.
	f, err := os.Open(filepath.Join(m.mnt, "e"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, dino := range direntInos(t, f) {
		if name == "." || name == ".." {
			continue
		}
		if got := ino(t, filepath.Join(m.mnt, "e", name)); got != dino {
			t.Errorf("%s: d_ino %d, st_ino %d", name, dino, got)
		}
	}
}

func TestAttrsAfterOps(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"f": "12345"}})
	p := filepath.Join(m.mnt, "f")
	st := lstat(t, p)
	if st.Size != 5 || st.Nlink != 1 {
		t.Errorf("lower file: size %d nlink %d", st.Size, st.Nlink)
	}
	before := st.Mtim
	time.Sleep(10 * time.Millisecond)
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("abcdefgh"), 3); err != nil {
		t.Fatal(err)
	}
	if st := lstat(t, p); st.Size != 11 || st.Mtim == before {
		t.Errorf("after write through an open file: size %d (want 11), mtime %v (was %v)", st.Size, st.Mtim, before)
	}
	f.Close()
	if err := os.Truncate(p, 2); err != nil {
		t.Fatal(err)
	}
	if st := lstat(t, p); st.Size != 2 {
		t.Errorf("after truncate: size %d", st.Size)
	}
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	if st := lstat(t, p); st.Mode&0o7777 != 0o640 {
		t.Errorf("after chmod: mode %o", st.Mode)
	}
	if err := os.Chown(p, 1234, 5678); err != nil {
		t.Fatal(err)
	}
	if st := lstat(t, p); st.Uid != 1234 || st.Gid != 5678 {
		t.Errorf("after chown: %d:%d", st.Uid, st.Gid)
	}
	mt := time.Date(2001, 2, 3, 4, 5, 6, 7000, time.UTC)
	if err := os.Chtimes(p, mt, mt); err != nil {
		t.Fatal(err)
	}
	if st := lstat(t, p); time.Unix(st.Mtim.Unix()).UTC() != mt {
		t.Errorf("after utimens: mtime %v, want %v", time.Unix(st.Mtim.Unix()).UTC(), mt)
	}
	if err := os.Link(p, filepath.Join(m.mnt, "g")); err != nil {
		t.Fatal(err)
	}
	if st := lstat(t, p); st.Nlink != 2 {
		t.Errorf("after link: nlink %d", st.Nlink)
	}
	if st := lstat(t, filepath.Join(m.mnt, "g")); st.Nlink != 2 || st.Ino != ino(t, p) {
		t.Errorf("the link: nlink %d, ino %d vs %d", st.Nlink, st.Ino, ino(t, p))
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if st := lstat(t, filepath.Join(m.mnt, "g")); st.Nlink != 1 || st.Size != 2 {
		t.Errorf("after unlinking the other name: nlink %d size %d", st.Nlink, st.Size)
	}
	// Disk untouched.
	mustRead(t, filepath.Join(m.root, "f"), "12345")
}

func TestRenameFlags(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"a": "A", "b": "B", "d/x": "X"}})
	at := func(name string) string { return filepath.Join(m.mnt, name) }
	if err := unix.Renameat2(unix.AT_FDCWD, at("a"), unix.AT_FDCWD, at("b"), unix.RENAME_NOREPLACE); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("RENAME_NOREPLACE over an existing file: %v", err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, at("a"), unix.AT_FDCWD, at("b"), unix.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}
	mustRead(t, at("a"), "B")
	mustRead(t, at("b"), "A")
	if err := unix.Renameat2(unix.AT_FDCWD, at("a"), unix.AT_FDCWD, at("d"), unix.RENAME_EXCHANGE); err != nil {
		t.Fatalf("exchange a file and a directory: %v", err)
	}
	mustRead(t, at("d"), "B")
	mustRead(t, at("a/x"), "X")

	// Rename over a target that is open: the handle keeps the old file.
	f, err := os.Open(at("b"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Rename(at("d"), at("b")); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(f); err != nil || string(got) != "A" {
		t.Errorf("open target after rename over it: %q, %v", got, err)
	}
	mustRead(t, at("b"), "B")
	if err := os.Rename(at("a"), at("b/sub")); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("rename below a file: %v", err)
	}
}

func TestSymlinkReaddir(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"d/one": "1", "d/two": "2"}})
	if err := os.Symlink("one", filepath.Join(m.mnt, "d/link")); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(m.mnt, "d/link")); err != nil || target != "one" {
		t.Errorf("readlink: %q, %v", target, err)
	}
	mustRead(t, filepath.Join(m.mnt, "d/link"), "1")
	ents, err := os.ReadDir(filepath.Join(m.mnt, "d"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name()+":"+e.Type().String())
	}
	if want := []string{"link:L---------", "one:----------", "two:----------"}; !slices.Equal(names, want) {
		t.Errorf("listing %q, want %q", names, want)
	}
	// A listing picks up a directory the engine created once the change
	// settled (as the control socket answers it): the kernel's cached
	// listing was dropped.
	if err := m.d.Fs(overlay.SourceACP).Mkdir("d/three", 0o755); err != nil {
		t.Fatal(err)
	}
	settle(t, m)
	if ents, err := os.ReadDir(filepath.Join(m.mnt, "d")); err != nil || len(ents) != 4 {
		t.Errorf("listing after an engine mkdir: %d entries, %v", len(ents), err)
	}
}

// TestReaddirplusDraftFileAttrs: a listing of files the kernel has not
// looked up yet (made through the engine, not the mount) gives it their
// attributes, size and times included, which a stat then answers from
// its cache; a listing describes a draft file from the draft's records
// only where the kernel knows the file already.
func TestReaddirplusDraftFileAttrs(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"d/disk": "on disk"}})
	v := m.d.Fs(overlay.SourceACP)
	want := map[string]string{"a": "one", "b": "twenty-two bytes long.", "c": ""}
	for name, content := range want {
		if err := afero.WriteFile(v, "d/"+name, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := v.Chtimes("d/b", old, old); err != nil {
		t.Fatal(err)
	}
	settle(t, m)
	for round := range 2 { // the second finds every node known
		if _, err := os.ReadDir(filepath.Join(m.mnt, "d")); err != nil {
			t.Fatal(err)
		}
		for name, content := range want {
			fi, err := os.Lstat(filepath.Join(m.mnt, "d", name))
			if err != nil {
				t.Fatal(err)
			}
			efi, err := v.Lstat("d/" + name)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() != int64(len(content)) || !fi.ModTime().Equal(efi.ModTime()) || fi.Mode() != efi.Mode() {
				t.Errorf("round %d: %s listed as size %d, mtime %v, mode %v; the engine says %d, %v, %v",
					round, name, fi.Size(), fi.ModTime(), fi.Mode(), efi.Size(), efi.ModTime(), efi.Mode())
			}
		}
	}
}

func TestStatfs(t *testing.T) {
	m := testMount(t, mountOptions{})
	var got, want unix.Statfs_t
	if err := unix.Statfs(m.mnt, &got); err != nil {
		t.Fatal(err)
	}
	if err := unix.Statfs(m.root, &want); err != nil {
		t.Fatal(err)
	}
	if got.Blocks != want.Blocks || got.Bsize != want.Bsize {
		t.Errorf("statfs: %d blocks of %d, disk %d of %d", got.Blocks, got.Bsize, want.Blocks, want.Bsize)
	}
}

// TestReadahead: as root, the mount reads ahead readaheadKiB, not the
// kernel's 128 KiB.
func TestReadahead(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root may set a device's read-ahead")
	}
	m := testMount(t, mountOptions{})
	var st syscall.Stat_t
	if err := syscall.Stat(m.mnt, &st); err != nil {
		t.Fatal(err)
	}
	p := fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", unix.Major(st.Dev), unix.Minor(st.Dev))
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("no sysfs here")
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != strconv.Itoa(readaheadKiB) {
		t.Fatalf("%s = %s, want %d", p, got, readaheadKiB)
	}
}

func TestSeekDataHole(t *testing.T) {
	m := testMount(t, mountOptions{})
	f, err := os.Create(filepath.Join(m.mnt, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const hole = 1 << 20
	if _, err := f.WriteAt(bytes.Repeat([]byte("x"), 4096), hole); err != nil {
		t.Fatal(err)
	}
	if off, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_DATA); err != nil || off != hole {
		t.Errorf("SEEK_DATA from 0: %d, %v; want %d", off, err, hole)
	}
	if off, err := unix.Seek(int(f.Fd()), hole, unix.SEEK_HOLE); err != nil || off != hole+4096 {
		t.Errorf("SEEK_HOLE from the data: %d, %v; want %d", off, err, hole+4096)
	}
	if _, err := unix.Seek(int(f.Fd()), hole+4096, unix.SEEK_DATA); !errors.Is(err, syscall.ENXIO) {
		t.Errorf("SEEK_DATA at the end: %v, want ENXIO", err)
	}
}
