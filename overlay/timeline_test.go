//go:build linux

package overlay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

// TestCheckpointCountsLines checks a checkpoint's added and deleted
// lines, with the new files' content kept from the capture and, over
// freshMax, read back from the chunks: the counts are the same.
func TestCheckpointCountsLines(t *testing.T) {
	for _, keep := range []int{freshMax, 0} {
		root := t.TempDir()
		cmWrite(t, root, map[string]string{"edit.txt": "1\n2\n3\n4\n5\n"})
		w, err := Open(Options{Root: root, StateDir: t.TempDir()})
		must(t, err)
		d, _ := w.Draft("")
		f := d.Fs(SourceMount)
		for name, content := range map[string]string{
			"new.txt":     "a\nb\nc\n",      // 3
			"partial.txt": "a\nb",           // 2
			"empty.txt":   "",               // 0
			"binary":      "a\x00\nb\x00\n", // binary: 0
			"edit.txt":    "1\n2\nthree\n4\n5\n",
		} {
			must(t, afero.WriteFile(f, name, []byte(content), 0o644))
		}
		saved := freshMax
		freshMax = keep
		cp, err := d.Checkpoint(Author{Source: SourceMount}, "")
		freshMax = saved
		must(t, err)
		if cp.Added != 6 || cp.Deleted != 1 || len(cp.Files) != 5 {
			t.Errorf("freshMax %d: %d files, +%d -%d, want 5 files, +6 -1", keep, len(cp.Files), cp.Added, cp.Deleted)
		}
		w.Close()
	}
}

// TestCheckpointSkipsFileGoneWhileRead: a checkpoint reads data files
// without the draft's lock. A file removed while it is read counts as
// gone, also when its data file, emptied, became another file's (a
// spare) under the same name meanwhile: what was read is not the removed
// file's, nor is the new file's content taken for it.
func TestCheckpointSkipsFileGoneWhileRead(t *testing.T) {
	for _, reuse := range []bool{false, true} {
		root := t.TempDir()
		w, err := Open(Options{Root: root, StateDir: t.TempDir()})
		must(t, err)
		d, _ := w.Draft("")
		f := d.Fs(SourceMount)
		must(t, afero.WriteFile(f, "gone.txt", []byte("the removed file\n"), 0o644))
		d.mu.RLock()
		ino := d.entries["gone.txt"].Ino
		name := d.inodes[ino].dataName(ino)
		d.mu.RUnlock()
		fired := false
		testHookContentRead = func(read uint64) {
			if read != ino || fired {
				return
			}
			fired = true
			must(t, f.Remove("gone.txt"))
			if reuse {
				must(t, afero.WriteFile(f, "new.txt", []byte("the new file\n"), 0o644))
				d.mu.RLock()
				n := d.inodes[d.entries["new.txt"].Ino]
				took := n.dataName(d.entries["new.txt"].Ino) == name
				d.mu.RUnlock()
				if !took {
					t.Fatalf("new.txt did not take the removed file's data file %s", name)
				}
			}
		}
		_, err = d.Checkpoint(Author{Source: SourceMount}, "")
		testHookContentRead = nil
		must(t, err)
		if !fired {
			t.Fatal("the checkpoint did not read gone.txt")
		}
		d.tl.mu.Lock()
		cd := d.tl.last.Data[ino]
		d.tl.mu.Unlock()
		if cd != nil {
			t.Errorf("reuse %v: the checkpoint keeps content for the removed file's inode %d (%d bytes)", reuse, ino, cd.Size)
		}
		w.Close()
	}
}

// TestCheckpointSeesRewriteWithSameSizeAndMtime: a file written again
// with content of the same size and its mtime put back (touch -r, cp -p
// of a file with the same size and time) is read again for the next
// checkpoint, and a rewind to either checkpoint gives back its content.
func TestCheckpointSeesRewriteWithSameSizeAndMtime(t *testing.T) {
	w, err := Open(Options{Root: t.TempDir(), StateDir: t.TempDir()})
	must(t, err)
	defer w.Close()
	d, _ := w.Draft("")
	f := d.Fs(SourceMount)
	mtime := time.Unix(1e9, 0)
	var ids []uint64
	for _, content := range []string{"A\n", "B\n"} {
		must(t, afero.WriteFile(f, "f", []byte(content), 0o644))
		must(t, f.Chtimes("f", mtime, mtime))
		cp, err := d.Checkpoint(Author{Source: SourceMount}, "")
		must(t, err)
		if cp == nil {
			t.Fatalf("no checkpoint after f became %q", content)
		}
		ids = append(ids, cp.ID)
	}
	for i, want := range []string{"A\n", "B\n"} {
		_, err := d.Rewind(ids[i], Author{Source: SourceCLI})
		must(t, err)
		if b, _ := afero.ReadFile(f, "f"); string(b) != want {
			t.Errorf("after rewinding to checkpoint %d: f is %q, want %q", ids[i], b, want)
		}
	}
}

// TestReadAll: readAll reads a file whole whether it has the size given
// (a file found so), more (it grew since) or less.
func TestReadAll(t *testing.T) {
	content := strings.Repeat("0123456789", 1000)
	p := filepath.Join(t.TempDir(), "f")
	must(t, os.WriteFile(p, []byte(content), 0o600))
	for _, size := range []int64{0, 1, 9999, 10000, 10001, 1 << 20} {
		fd, err := unix.Open(p, unix.O_RDONLY, 0)
		must(t, err)
		b, err := readAll(fd, size)
		unix.Close(fd)
		if err != nil || string(b) != content {
			t.Errorf("readAll with size %d: %d bytes, %v; want the file's %d", size, len(b), err, len(content))
		}
	}
}
