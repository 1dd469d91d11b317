//go:build linux

package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/draftfs/draftfs/daemon/mounts"
	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/protocol/control"
)

func options(t *testing.T) Options {
	tmp, err := os.MkdirTemp("", "dmn") // short: the socket lives below
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	ws := filepath.Join(tmp, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return Options{Workspace: ws, StateDir: filepath.Join(tmp, "st"), Command: "test"}
}

// TestStartTwice: one daemon per workspace; the next starts once the
// first closed.
func TestStartTwice(t *testing.T) {
	opts := options(t)
	d, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(opts)
	if !errors.Is(err, ErrRunning) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d (draftfs test)", os.Getpid())) ||
		!strings.Contains(err.Error(), d.Socket()) {
		t.Fatalf("second start: %v", err)
	}
	c, err := control.Dial(d.Socket())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status(""); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := control.Dial(d.Socket()); !errors.Is(err, control.ErrNoDaemon) {
		t.Fatalf("after Close: %v", err)
	}
	d, err = Start(opts)
	if err != nil {
		t.Fatalf("start after close: %v", err)
	}
	d.Close()
}

// TestStartFails: nothing is left behind when the draft cannot open.
func TestStartFails(t *testing.T) {
	opts := options(t)
	opts.Draft = "bad/name"
	if _, err := Start(opts); err == nil {
		t.Fatal("started with a bad draft name")
	}
	opts.Draft = ""
	d, err := Start(opts) // the lock and socket were released
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
}

func needFUSE(t *testing.T) {
	fd, err := syscall.Open("/dev/fuse", syscall.O_RDWR, 0)
	if err != nil {
		t.Skipf("FUSE is not available: %v", err)
	}
	syscall.Close(fd)
}

// TestMounts: the main mount (its directory created and removed), a
// draft mounted on request under the state directory, and Done when the
// main mount is unmounted from outside.
func TestMounts(t *testing.T) {
	needFUSE(t)
	opts := options(t)
	opts.Mount = filepath.Join(filepath.Dir(opts.Workspace), "view")
	if err := os.WriteFile(filepath.Join(opts.Workspace, "f"), []byte("disk"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if mp := d.Mountpoint(overlay.DefaultDraft); mp != opts.Mount {
		t.Fatalf("mountpoint %q", mp)
	}
	if b, err := os.ReadFile(filepath.Join(opts.Mount, "f")); err != nil || string(b) != "disk" {
		t.Fatalf("read through the mount: %q %v", b, err)
	}
	other, err := d.Mount("other", "")
	if err != nil {
		t.Fatal(err)
	}
	if other != filepath.Join(opts.StateDir, "mnt", "other") {
		t.Fatalf("draft mounted at %s", other)
	}
	if again, err := d.Mount("other", ""); err != nil || again != other {
		t.Fatalf("mounting again: %s %v", again, err)
	}
	if err := os.WriteFile(filepath.Join(other, "g"), []byte("other draft"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _ := d.Draft().Status(); len(st) != 0 {
		t.Fatalf("the main draft got the other's write: %+v", st)
	}

	if err := mounts.Unmount(opts.Mount); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after the main mount went away")
	}
	if _, err := os.Stat(opts.Mount); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the created mount point is left: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the draft's mount point is left: %v", err)
	}
}

// TestFatalDetachesMounts: after a handler's panic (control's Fatal) the
// daemon says so, detaches its mounts, in use or not, without waiting
// for their requests, and ends the process (Options.Fatal).
func TestFatalDetachesMounts(t *testing.T) {
	needFUSE(t)
	opts := options(t)
	opts.Mount = filepath.Join(filepath.Dir(opts.Workspace), "view")
	if err := os.WriteFile(filepath.Join(opts.Workspace, "f"), []byte("disk"), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs []string
	opts.Logf = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, fmt.Sprintf(format, args...))
	}
	ended := false
	opts.Fatal = func() { ended = true }
	d, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	busy, err := os.Open(filepath.Join(opts.Mount, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	d.fatal(errors.New("internal error in draft/commit: boom"))
	if !ended {
		t.Error("Options.Fatal not called")
	}
	if typ, err := mounts.At(opts.Mount); err != nil || typ != "" {
		t.Errorf("the mount is still there: %q %v", typ, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(logs, "\n"), "internal error in draft/commit: boom. This is a bug") {
		t.Errorf("logged %q", logs)
	}
}
