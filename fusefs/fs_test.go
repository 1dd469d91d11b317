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

func TestUnlinkOpenFile(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"lower": "from disk"}})
	p := filepath.Join(m.mnt, "new")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("hello"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(" world"); err != nil {
		t.Errorf("write after unlink: %v", err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatalf("fstat after unlink: %v", err)
	}
	if st.Nlink != 0 || st.Size != 11 {
		t.Errorf("fstat after unlink: nlink %d size %d", st.Nlink, st.Size)
	}
	buf := make([]byte, 11)
	if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "hello world" {
		t.Errorf("read after unlink: %q, %v", buf, err)
	}

	// A lower file read while it is removed (a whiteout) keeps reading.
	g, err := os.Open(filepath.Join(m.mnt, "lower"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := os.Remove(filepath.Join(m.mnt, "lower")); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(g); err != nil || string(b) != "from disk" {
		t.Errorf("read of removed lower file: %q, %v", b, err)
	}
	mustRead(t, filepath.Join(m.root, "lower"), "from disk")
}

// TestWriteUnlinkedLowerFile: a disk file or an editor's unsaved file
// open for writing keeps taking writes once its name is unlinked or
// replaced through the mount, as on a local disk, while the disk and the
// editor's text stay as they were.
func TestWriteUnlinkedLowerFile(t *testing.T) {
	for _, c := range []struct {
		name   string
		buffer bool // the file is an editor's unsaved text
		unlink func(m *mounted, p string) error
	}{
		{"unlinked", false, func(m *mounted, p string) error { return os.Remove(p) }},
		{"renamed over", false, func(m *mounted, p string) error {
			if err := os.WriteFile(p+".new", []byte("replacement\n"), 0o644); err != nil {
				return err
			}
			return os.Rename(p+".new", p)
		}},
		{"editor's file unlinked", true, func(m *mounted, p string) error { return os.Remove(p) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := testMount(t, mountOptions{files: map[string]string{"f": "from disk\n"}})
			want := "from disk\n"
			if c.buffer {
				want = "unsaved\n"
				if err := m.ws.Buffers().Open("f", 1, []byte(want)); err != nil {
					t.Fatal(err)
				}
			}
			p := filepath.Join(m.mnt, "f")
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			mustReadAt(t, f, want)
			if err := c.unlink(m, p); err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte("FROM"), 0); err != nil {
				t.Fatalf("write after the name went: %v", err)
			}
			if err := f.Truncate(int64(len(want)) + 2); err != nil {
				t.Fatalf("ftruncate after the name went: %v", err)
			}
			want = "FROM" + want[4:] + "\x00\x00"
			mustReadAt(t, f, want)
			var st syscall.Stat_t
			if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
				t.Fatal(err)
			}
			if st.Nlink != 0 || st.Size != int64(len(want)) || st.Mode&0o777 != 0o644 {
				t.Errorf("fstat: nlink %d, size %d, mode %o; want 0, %d, 644", st.Nlink, st.Size, st.Mode&0o777, len(want))
			}
			mustRead(t, filepath.Join(m.root, "f"), "from disk\n")
			if c.buffer {
				if snap, ok := m.ws.Buffers().Get("f"); !ok || string(snap.Text) != "unsaved\n" {
					t.Errorf("editor's text: %q (open %v)", snap.Text, ok)
				}
			}
		})
	}
}

// TestRemovedDirStillOpen: fstat of a directory open when it was
// removed, or replaced by a rename, answers as on a local disk.
func TestRemovedDirStillOpen(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"d/": "", "e/": "", "src/": ""}})
	for _, c := range []struct {
		dir    string
		remove func(p string) error
	}{
		{"d", os.Remove},
		{"e", func(p string) error { return syscall.Rename(filepath.Join(m.mnt, "src"), p) }}, // os.Rename refuses
	} {
		p := filepath.Join(m.mnt, c.dir)
		if err := os.Chmod(p, 0o710); err != nil {
			t.Fatal(err)
		}
		d, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := c.remove(p); err != nil {
			t.Fatal(err)
		}
		fi, err := d.Stat()
		if err != nil {
			t.Fatalf("%s: fstat once removed: %v", c.dir, err)
		}
		if !fi.IsDir() || fi.Mode().Perm() != 0o710 {
			t.Errorf("%s: fstat once removed: %v", c.dir, fi.Mode())
		}
	}
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

// TestReaderSeesWrites checks that a file opened for reading before a
// write through another descriptor (which copies it up into the draft)
// reads what was written, as on a local disk, and that the disk keeps
// its content. In passthrough mode the reader keeps the disk file it
// opened (see the package documentation, Passthrough).
func TestReaderSeesWrites(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"f": "disk text"}})
	p := filepath.Join(m.mnt, "f")
	r, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := os.WriteFile(p, []byte("draft text"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "draft text"
	if m.passthrough {
		// The kernel reads the disk file it opened.
		want = "disk text"
	}
	if b, err := io.ReadAll(r); err != nil || string(b) != want {
		t.Errorf("reader opened before the write: %q, %v; want %q", b, err, want)
	}
	mustRead(t, p, "draft text")
	if ino(t, p) != ino(t, filepath.Join(m.root, "f")) {
		t.Errorf("the copied-up file has another inode number")
	}
	mustRead(t, filepath.Join(m.root, "f"), "disk text")
}

func mustRead(t testing.TB, p, want string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	if string(b) != want {
		t.Fatalf("read %s: %q, want %q", p, b, want)
	}
}

func lstat(t testing.TB, p string) syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatalf("lstat %s: %v", p, err)
	}
	return st
}

func ino(t testing.TB, p string) uint64 { t.Helper(); return lstat(t, p).Ino }

// direntInos reads a directory's entries with their d_ino.
func direntInos(t testing.TB, f *os.File) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(int(f.Fd()), buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return out
		}
		for b := buf[:n]; len(b) > 0; {
			reclen := int(b[16]) | int(b[17])<<8
			ino := uint64(0)
			for i := 7; i >= 0; i-- {
				ino = ino<<8 | uint64(b[i])
			}
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			out[string(name)] = ino
			b = b[reclen:]
		}
	}
}

// TestDiscardWhileOpen discards a file whose draft copy is open: once
// the discard settled, a new open and the descriptor opened before it
// both read the disk again (a change made outside the mount reaches open
// descriptors, as on a network file system). In passthrough mode the
// descriptor keeps the draft file it opened.
func TestDiscardWhileOpen(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"f.txt": "disk\n"}})
	p := filepath.Join(m.mnt, "f.txt")
	if err := os.WriteFile(p, []byte("draft\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if m.passthrough {
		waitReleased(t, m) // so the next open uses passthrough
	}
	held, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := m.d.Discard([]string{"f.txt"}, overlay.SourceCLI); err != nil {
		t.Fatal(err)
	}
	settle(t, m)
	mustRead(t, p, "disk\n")
	want := "disk\n"
	if m.passthrough {
		// The kernel reads the draft file it opened.
		want = "draft\n"
	}
	if b, err := io.ReadAll(held); err != nil || string(b) != want {
		t.Errorf("the descriptor opened before the discard reads %q, %v; want %q", b, err, want)
	}
}

func TestXattrs(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"f": "text"}})
	if err := unix.Setxattr(filepath.Join(m.root, "f"), "user.disk", []byte("from disk"), 0); err != nil {
		t.Skipf("the disk keeps no user xattrs: %v", err)
	}
	p := filepath.Join(m.mnt, "f")
	buf := make([]byte, 64)
	if n, err := unix.Getxattr(p, "user.disk", buf); err != nil || string(buf[:n]) != "from disk" {
		t.Errorf("disk xattr through the mount: %q, %v", buf[:n], err)
	}
	if err := unix.Setxattr(p, "user.mine", []byte("agent"), unix.XATTR_CREATE); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(p, "user.mine", []byte("again"), unix.XATTR_CREATE); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("XATTR_CREATE over an existing one: %v", err)
	}
	n, err := unix.Listxattr(p, buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(strings.TrimSuffix(string(buf[:n]), "\x00"), "\x00"); !slices.Equal(got, []string{"user.disk", "user.mine"}) {
		t.Errorf("listxattr: %q", got)
	}
	if _, err := unix.Getxattr(filepath.Join(m.root, "f"), "user.mine", buf); !errors.Is(err, unix.ENODATA) {
		t.Errorf("the disk got the draft's xattr: %v", err)
	}
	if err := unix.Removexattr(p, "user.disk"); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Getxattr(p, "user.disk", buf); !errors.Is(err, unix.ENODATA) {
		t.Errorf("removed xattr: %v", err)
	}
	if err := unix.Setxattr(p, "trusted.x", []byte("x"), 0); err == nil {
		t.Errorf("a trusted.* xattr was accepted")
	}
}

// TestHeldAcrossCommit writes through a descriptor opened before a
// commit gave its file a new inode number and after another process
// looked the path up again (so the kernel has a new node for it): the
// write reaches the file, as it would on a local disk.
func TestHeldAcrossCommit(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"f.txt": "disk\n"}})
	p := filepath.Join(m.mnt, "f.txt")
	if err := os.WriteFile(p, []byte("draft\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	before := ino(t, p)
	if _, err := m.d.Commit(overlay.CommitOptions{Source: overlay.SourceCLI}); err != nil {
		t.Fatal(err)
	}
	settle(t, m)
	if ino(t, p) == before {
		t.Fatal("the commit kept the inode number: the test needs a new one")
	}
	if _, err := w.WriteString("more\n"); err != nil {
		t.Fatalf("write through the descriptor held across the commit: %v", err)
	}
	mustRead(t, p, "draft\nmore\n")
	mustRead(t, filepath.Join(m.root, "f.txt"), "draft\n")
}
