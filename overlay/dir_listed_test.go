//go:build linux

package overlay

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spf13/afero"
)

// TestListingDescribesAsLstat: a listing's entries describe each name as
// Lstat does (the disk's names from the stat the listing read), and a
// change published since the listing is seen, whatever its source.
func TestListingDescribesAsLstat(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "d/e"), 0o750))
	for name, text := range map[string]string{"a": "abc", "b": "bbbbb", "c": "c", "gone": "g", "d/f": "f"} {
		must(t, os.WriteFile(filepath.Join(root, name), []byte(text), 0o640))
	}
	must(t, os.Symlink("a", filepath.Join(root, "l")))
	w, err := Open(Options{Root: root, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	d, _ := w.Draft("")
	f := d.Fs(SourceCLI)
	must(t, afero.WriteFile(f, "x", []byte("new"), 0o600))
	must(t, f.Rename("c", "r"))
	must(t, f.Remove("gone"))
	must(t, f.Chmod("d", 0o700))

	same := func(what string, want ...string) {
		t.Helper()
		ents, err := f.ReadDirPlus("")
		if err != nil {
			t.Fatal(err)
		}
		names := []string{}
		for _, e := range ents {
			names = append(names, e.Name())
			got, err := e.Info()
			if err != nil {
				t.Fatalf("%s: Info of %s: %v", what, e.Name(), err)
			}
			want, err := f.Lstat(e.Name())
			if err != nil {
				t.Fatal(err)
			}
			if got.Name() != want.Name() || got.Size() != want.Size() || got.Mode() != want.Mode() ||
				!got.ModTime().Equal(want.ModTime()) || !reflect.DeepEqual(got.Sys(), want.Sys()) {
				t.Errorf("%s: %s: listing says %v %d %v %+v, Lstat %v %d %v %+v", what, e.Name(),
					got.Mode(), got.Size(), got.ModTime(), got.Sys(), want.Mode(), want.Size(), want.ModTime(), want.Sys())
			}
		}
		if !reflect.DeepEqual(names, want) {
			t.Fatalf("%s: listing %v, want %v", what, names, want)
		}
	}
	same("at first", "a", "b", "d", "l", "r", "x")

	// A disk change: what the listing read holds until something is
	// published (the watcher publishes the change itself, here a write
	// through the draft stands in for it), and no longer after.
	ents, err := f.ReadDirPlus("")
	if err != nil {
		t.Fatal(err)
	}
	a := ents[0]
	must(t, os.WriteFile(filepath.Join(root, "a"), []byte("abcdef"), 0o640))
	if fi, err := a.Info(); err != nil || fi.Size() != 3 {
		t.Fatalf("nothing published: Info %v %v, want the listing's size 3", fi, err)
	}
	must(t, afero.WriteFile(f, "x", []byte("newer"), 0o600))
	if fi, err := a.Info(); err != nil || fi.Size() != 6 {
		t.Fatalf("after a publish: Info %v %v, want the disk's new size 6", fi, err)
	}

	// A name the draft changes after the listing: described from the
	// draft.
	ents, err = f.ReadDirPlus("")
	if err != nil {
		t.Fatal(err)
	}
	must(t, afero.WriteFile(f, "a", []byte("drafted!"), 0o640))
	// Even read before the write was published (a mount may be listing
	// while it is being made): the draft's object is not the disk's.
	ents[0].(*dirEntry).seq = d.w.feed.seq.Load()
	if fi, err := ents[0].Info(); err != nil || fi.Size() != 8 {
		t.Fatalf("written in the draft since the listing: Info %v %v, want size 8", fi, err)
	}
	must(t, f.Rename("b", "a"))
	ents[0].(*dirEntry).seq = d.w.feed.seq.Load()
	if fi, err := ents[0].Info(); err != nil || fi.Size() != 5 {
		t.Fatalf("renamed over in the draft since the listing: Info %v %v, want b's size 5", fi, err)
	}
	must(t, f.Remove("a"))
	ents[0].(*dirEntry).seq = d.w.feed.seq.Load()
	if fi, err := ents[0].Info(); err == nil {
		t.Fatalf("removed in the draft since the listing: Info %v, want an error", fi)
	} else if !os.IsNotExist(err) {
		t.Fatalf("removed in the draft since the listing: %v, want %v", err, fs.ErrNotExist)
	}
	same("after the changes", "d", "l", "r", "x")
}
