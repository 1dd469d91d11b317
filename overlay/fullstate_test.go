//go:build linux

package overlay

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A write refused for a full state disk says what to free and how much
// the state holds, and keeps the errno for the front ends.
func TestFullStateWriteSaysWhatToFree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	state := t.TempDir()
	if err := syscall.Mount("tmpfs", state, "tmpfs", 0, "size=2m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	defer syscall.Unmount(state, syscall.MNT_DETACH)
	root := t.TempDir()
	w, err := Open(Options{Root: root, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	d, err := w.Draft("")
	if err != nil {
		t.Fatal(err)
	}
	f := d.Fs(SourceMount)
	filler, err := os.Create(filepath.Join(state, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for buf := make([]byte, 4096); ; {
		if _, err := filler.Write(buf); err != nil {
			break
		}
	}
	filler.Close()
	var werr error
	for i := 0; werr == nil && i < 10000; i++ {
		werr = f.Mkdir("dir"+strings.Repeat("x", 200)+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676)), 0o755)
	}
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Fatalf("changes on a full state disk: %v, want ENOSPC", werr)
	}
	if msg := werr.Error(); !strings.Contains(msg, "is full") || !strings.Contains(msg, "the draft's state holds") || !strings.Contains(msg, "draftfs gc") {
		t.Fatalf("error does not say what to free: %v", werr)
	}
}
