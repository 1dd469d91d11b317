//go:build linux

package fusefs

import (
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
		const want = "replacement\n"
		if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Nlink != 0 || st.Size != int64(len(want)) {
			t.Errorf("content %q: fstat once the name was replaced: mode %o, nlink %d, size %d; want a regular file, 0 links, %d bytes", content, st.Mode, st.Nlink, st.Size, len(want))
		}
		buf := make([]byte, 64)
		n, err := syscall.Pread(fd, buf, 0)
		if err != nil || string(buf[:n]) != want {
			t.Errorf("content %q: read once the name was replaced: %q, %v; want %q", content, buf[:max(n, 0)], err, want)
		}
	}
}
