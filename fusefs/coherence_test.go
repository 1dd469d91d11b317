//go:build linux

package fusefs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/draftfs/draftfs/overlay"
)

// reader is another process that reads a file through the mount each
// time it is asked to, so the read is issued after the ask.
type reader struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startReader starts sh reading the file named on each input line and
// printing it base64-free between markers.
func startReader(t *testing.T) *reader {
	t.Helper()
	return startLoop(t, "", `cat "$p"`)
}

// startLoop starts sh running cmd (in dir when given) for each input
// line, with the line in $p, and ending each output with a marker.
func startLoop(t *testing.T, dir, cmd string) *reader {
	t.Helper()
	script := `while read -r p; do ` + cmd + `; echo; echo '@@END@@'; done`
	if dir != "" {
		script = `cd "$0" && ` + script
	}
	c := exec.Command("/bin/sh", "-c", script, dir)
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = io.Discard // cat of a removed file complains
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	r := &reader{cmd: c, in: in, out: bufio.NewReader(out)}
	t.Cleanup(func() {
		in.Close()
		c.Wait()
	})
	return r
}

// read has the process read p now, and returns what it read.
func (r *reader) read(t *testing.T, p string) string {
	t.Helper()
	if _, err := fmt.Fprintln(r.in, p); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for {
		line, err := r.out.ReadString('\n')
		if err != nil {
			t.Fatalf("reader: %v (read so far %q)", err, b.String())
		}
		if line == "@@END@@\n" {
			return strings.TrimSuffix(b.String(), "\n")
		}
		b.WriteString(line)
	}
}

// texts gives the i-th content: lengths go up and down, so a stale size
// as well as stale pages would show.
func text(i int) string {
	return fmt.Sprintf("version %d %s\n", i, strings.Repeat("x", (i*7)%53))
}

// settle waits, as the control socket does before answering, until the
// mount applied every change made so far.
func settle(t *testing.T, m *mounted) {
	t.Helper()
	if !m.ws.Settle(5 * time.Second) {
		t.Fatal("the mount did not apply the changes within 5 s")
	}
}

// TestCoherenceBufferPush pushes buffer versions and reads each once the
// push has settled (as the control socket answers a push): from this
// process at once and from another one.
func TestCoherenceBufferPush(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"f.txt": "on disk\n", "other.txt": "other\n"}})
	r := startReader(t)
	p := filepath.Join(m.mnt, "f.txt")
	if got := r.read(t, p); got != "on disk\n" {
		t.Fatalf("before any push: %q", got)
	}
	// A descriptor opened before the pushes: its pages must not be what
	// later opens read.
	held, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	bufs := m.ws.Buffers()
	if err := bufs.Open("f.txt", 1, []byte(text(1))); err != nil {
		t.Fatal(err)
	}
	for i := 2; i <= 2000; i++ {
		if _, err := bufs.Replace("f.txt", int64(i), []byte(text(i))); err != nil {
			t.Fatal(err)
		}
		settle(t, m)
		if b, err := os.ReadFile(p); err != nil || string(b) != text(i) {
			t.Fatalf("push %d: read %q, %v; want %q", i, b, err, text(i))
		}
		if i%20 == 0 {
			if got := r.read(t, p); got != text(i) {
				t.Fatalf("push %d: another process read %q, want %q", i, got, text(i))
			}
		}
	}
	// A buffer for a path not on disk shows, and goes with its close.
	if err := bufs.Open("new.txt", 1, []byte("only a buffer\n")); err != nil {
		t.Fatal(err)
	}
	settle(t, m)
	if got := r.read(t, filepath.Join(m.mnt, "new.txt")); got != "only a buffer\n" {
		t.Errorf("buffer-only file: %q", got)
	}
	if err := bufs.Close("f.txt"); err != nil {
		t.Fatal(err)
	}
	settle(t, m)
	if got := r.read(t, p); got != "on disk\n" {
		t.Errorf("after the buffer closed: %q", got)
	}
	if got := statusPaths(t, m.d); len(got) != 0 {
		t.Errorf("buffers changed the draft: %q", got)
	}
}

// TestCoherenceEngineWrites does the same with writes, creates, renames,
// removals, a commit and a discard through the engine (as ACP makes
// them).
func TestCoherenceEngineWrites(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"f.txt": "on disk\n"}})
	r := startReader(t)
	acp := m.d.Fs(overlay.SourceACP)
	p := filepath.Join(m.mnt, "f.txt")
	if got := r.read(t, p); got != "on disk\n" {
		t.Fatalf("before any write: %q", got)
	}
	readNow := func(i int, p, want string) {
		t.Helper()
		b, err := os.ReadFile(p)
		if want == "" && errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil || string(b) != want {
			t.Fatalf("write %d: read %s: %q, %v; want %q", i, p, b, err, want)
		}
	}
	for i := 1; i <= 600; i++ {
		if err := afero.WriteFile(acp, "f.txt", []byte(text(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		settle(t, m)
		readNow(i, p, text(i))
		if i%20 == 0 {
			if got := r.read(t, p); got != text(i) {
				t.Fatalf("write %d: another process read %q, want %q", i, got, text(i))
			}
		}
		// Files the engine creates, renames and removes.
		name := fmt.Sprintf("n%d.txt", i%3)
		if err := afero.WriteFile(acp, name, []byte(text(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		settle(t, m)
		readNow(i, filepath.Join(m.mnt, name), text(i))
		switch i % 3 {
		case 0:
			if err := acp.Remove(name); err != nil {
				t.Fatal(err)
			}
			settle(t, m)
			readNow(i, filepath.Join(m.mnt, name), "")
		case 1:
			if err := acp.Rename(name, "moved.txt"); err != nil {
				t.Fatal(err)
			}
			settle(t, m)
			readNow(i, filepath.Join(m.mnt, "moved.txt"), text(i))
		}
	}
	// A commit gives the file a new disk inode; a discard brings the
	// disk back.
	if _, err := m.d.Commit(overlay.CommitOptions{Keys: []string{"f.txt"}, Source: overlay.SourceCLI}); err != nil {
		t.Fatal(err)
	}
	settle(t, m)
	if got := r.read(t, p); got != text(600) {
		t.Errorf("after commit: %q", got)
	}
	if err := afero.WriteFile(acp, "f.txt", []byte("draft again\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	settle(t, m)
	readNow(0, p, "draft again\n")
	if _, err := m.d.Discard([]string{"f.txt"}, overlay.SourceCLI); err != nil {
		t.Fatal(err)
	}
	settle(t, m)
	readNow(0, p, text(600))
	if got := r.read(t, p); got != text(600) {
		t.Errorf("after discard: %q", got)
	}
}
