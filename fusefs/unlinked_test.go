//go:build linux

package fusefs

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/overlay"
)

// TestFstatAfterNameReplaced: fstat of an open file never fails, however
// its name was replaced. Here the descriptor's node lost its name to
// another node first (the engine replaced the file outside the mount,
// and a lookup made a node for the new one, which the old node then
// follows), and the name was then renamed over through the mount: only
// the node holding the name was pinned. go-fuse's posixtest
// OpenSymlinkRace saw "Fstat: no such file or directory" in CI.
func TestFstatAfterNameReplaced(t *testing.T) {
	for _, content := range []string{"", "on disk\n"} {
		m := testMount(t, mountOptions{files: map[string]string{"f": content}})
		p := filepath.Join(m.mnt, "f")
		fd, err := syscall.Open(p, syscall.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(fd)
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			t.Fatal(err)
		}
		// The engine replaces f (as an agent's tool would), and a lookup
		// through the mount makes a node for the new file.
		acp := m.d.Fs(overlay.SourceACP)
		if err := afero.WriteFile(acp, "g", []byte("replacement\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := acp.Rename("g", "f"); err != nil {
			t.Fatal(err)
		}
		settle(t, m)
		if err := syscall.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		// A symlink renamed over f through the mount (OpenSymlinkRace).
		tmp := filepath.Join(m.mnt, "tmp")
		if err := os.Symlink("/etc/passwd", tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Fstat(fd, &st); err != nil {
			t.Fatalf("content %q: fstat once the name was replaced: %v", content, err)
		}
		// The descriptor followed the path to the replacement (see the
		// package documentation: changes made outside the mount reach
		// open descriptors), which is now unlinked.
		const replaced = "replacement\n"
		if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Nlink != 0 || st.Size != int64(len(replaced)) {
			t.Errorf("content %q: fstat once the name was replaced: mode %o, nlink %d, size %d; want a regular file, 0 links, %d bytes", content, st.Mode, st.Nlink, st.Size, len(replaced))
		}
		// In passthrough mode the kernel reads the file the open found
		// itself (its backing file).
		want := replaced
		if m.passthrough {
			want = content
		}
		buf := make([]byte, 64)
		n, err := syscall.Pread(fd, buf, 0)
		if err != nil || string(buf[:n]) != want {
			t.Errorf("content %q: read once the name was replaced: %q, %v; want %q", content, buf[:max(n, 0)], err, want)
		}
	}
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
