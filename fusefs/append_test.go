//go:build linux

package fusefs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/overlay"
)

// TestAppendAtTheFilesEnd: a write through a descriptor opened with
// O_APPEND lands at the end the file has now, also when another front
// end shortened it meanwhile: the kernel takes the offset of an
// O_APPEND write from the size it last knew, which the change only
// marked stale (an agent appending to a log while another channel
// rewrote it got zeros where the old content had been). So does one
// once the file's name went (the node's pinned handle).
func TestAppendAtTheFilesEnd(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"log.txt": "on disk\n"}})
	p := filepath.Join(m.mnt, "log.txt")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("one\n"); err != nil {
		t.Fatal(err)
	}
	if err := afero.WriteFile(m.d.Fs(overlay.SourceACP), "log.txt", []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	settle(t, m)
	if _, err := f.WriteString("two\n"); err != nil {
		t.Fatal(err)
	}
	b, err := afero.ReadFile(m.d.Fs(overlay.SourceCLI), "log.txt")
	if err != nil || string(b) != "new\ntwo\n" {
		t.Fatalf("the draft holds %q, %v; want %q", b, err, "new\ntwo\n")
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "new\ntwo\n" {
		t.Fatalf("the mount reads %q, %v; want %q", b, err, "new\ntwo\n")
	}

	g, err := os.OpenFile(filepath.Join(m.mnt, "gone.txt"), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := g.WriteString("hello"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(m.mnt, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{" wide", " world"} {
		if _, err := g.WriteString(s); err != nil {
			t.Fatalf("append after unlink: %v", err)
		}
	}
	buf := make([]byte, 64)
	if n, err := g.ReadAt(buf, 0); string(buf[:n]) != "hello wide world" {
		t.Fatalf("read after unlink: %q, %v", buf[:n], err)
	}
}
