//go:build linux

package overlay_test

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/overlay"
)

// A disk file that gets the disk number of a draft inode still open
// (an orphan: a copy-up removed in the draft, whose disk file a commit
// deleted) is shown under a number of its own. A handle opened on it
// then keeps that number when the orphan's last handle closes: fstat
// counts its link, and a copy-up of the file is still the handle's.
func TestRecycledNumberOutlivesOrphan(t *testing.T) {
	e := newViewEnv(t, map[string]string{"old": "old\n"})
	var st syscall.Stat_t
	must(t, syscall.Lstat(e.disk("old"), &st))
	num := st.Ino

	// The draft's copy of old keeps its disk number; removed in the
	// draft, it lives on for the writer open on it.
	w, err := e.v.OpenFile("old", os.O_RDWR, 0)
	must(t, err)
	defer func() {
		if w != nil {
			w.Close()
		}
	}()
	must(t, e.v.Remove("old"))
	if _, err := e.d.Commit(overlay.CommitOptions{Source: overlay.SourceCLI}); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if _, err := os.Lstat(e.disk("old")); !os.IsNotExist(err) {
		t.Fatalf("old on disk after the commit: %v", err)
	}

	// The disk gives old's number to a new file (ext4 does at once).
	var name string
	for i := 0; i < 200 && name == ""; i++ {
		p := fmt.Sprintf("new%d", i)
		must(t, os.WriteFile(e.disk(p), []byte("new\n"), 0o644))
		must(t, syscall.Lstat(e.disk(p), &st))
		if st.Ino == num {
			name = p
		}
	}
	if name == "" {
		t.Skip("the file system gave the number of a deleted file to none of 200 new ones")
	}

	r, err := e.v.Open(name)
	must(t, err)
	defer r.Close()
	fi, err := e.v.Lstat(name)
	must(t, err)
	opened := attrOf(t, fi).Ino
	if opened == num {
		t.Fatalf("%s is shown under the orphan's number %d", name, num)
	}

	// The orphan goes.
	must(t, w.Close())
	w = nil

	fi, err = r.Stat()
	must(t, err)
	if a := attrOf(t, fi); a.Nlink != 1 || a.Ino != opened {
		t.Errorf("fstat after the orphan went: nlink %d ino %d, want 1 and %d", a.Nlink, a.Ino, opened)
	}
	if fi, err = e.v.Lstat(name); err != nil || attrOf(t, fi).Ino != opened {
		t.Errorf("lstat after the orphan went: %v, number changed from %d", err, opened)
	}

	// A write through the view copies the file up: the handle open
	// before reads the copy, as on one inode.
	f, err := e.v.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0)
	must(t, err)
	_, err = f.Write([]byte("changed\n"))
	must(t, err)
	must(t, f.Close())
	b, err := io.ReadAll(r)
	must(t, err)
	if string(b) != "changed\n" {
		t.Errorf("handle read %q after the copy-up, want %q", b, "changed\n")
	}
}

// A copy-up keeps its disk file's number. When the copy moved away and
// the name it left shows the disk file again, the view shows two files
// (a write to one leaves the other): they must not share a number, or
// rename(2) takes them for two names of one file and does nothing.
// Both ways there: a part of the draft discarded, and a commit of the
// copy's new name undone after a discard (the model found the second:
// `rename f.txt c` left f.txt in the view).
func TestCopyBesideItsDiskFileIsAnotherFile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		apart func(e *viewEnv)
	}{
		{"discard part", func(e *viewEnv) {
			_, err := e.d.Discard([]string{"c"}, overlay.SourceCLI)
			must(t, err)
		}},
		{"undo after discard", func(e *viewEnv) {
			_, err := e.d.Commit(overlay.CommitOptions{Keys: []string{"f.txt"}})
			must(t, err)
			_, err = e.d.Discard(nil, overlay.SourceCLI)
			must(t, err)
			_, err = e.d.Undo(overlay.SourceCLI)
			must(t, err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newViewEnv(t, map[string]string{"c": "disk\n"})
			must(t, afero.WriteFile(e.v, "c", []byte("copy\n"), 0o644))
			must(t, e.v.Rename("c", "f.txt"))
			tc.apart(e)
			want := map[string]string{"c": "disk\n", "f.txt": "copy\n"}
			nums := map[uint64]string{}
			for p, w := range want {
				if got, err := afero.ReadFile(e.v, p); err != nil || string(got) != w {
					t.Fatalf("%s: %q %v, want %q", p, got, err, w)
				}
				fi, err := e.v.Lstat(p)
				must(t, err)
				n := fi.Sys().(*overlay.Attr).Ino
				if q, ok := nums[n]; ok {
					t.Fatalf("%s and %s, two files, share number %d", q, p, n)
				}
				nums[n] = p
			}
			must(t, e.v.Rename("f.txt", "c"))
			if _, err := e.v.Lstat("f.txt"); !os.IsNotExist(err) {
				t.Fatalf("f.txt after rename f.txt c: %v, want not there", err)
			}
			if got, err := afero.ReadFile(e.v, "c"); err != nil || string(got) != "copy\n" {
				t.Fatalf("c after rename f.txt c: %q %v, want the copy", got, err)
			}
		})
	}
}
