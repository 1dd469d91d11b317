package agent_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/agent"
)

func newLocal(t *testing.T) (string, *agent.Local) {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	w, err := overlay.Open(overlay.Options{Root: root, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	d, err := w.Draft("")
	if err != nil {
		t.Fatal(err)
	}
	return root, agent.NewLocal(d, overlay.SourceMCP)
}

func TestLocalReadWrite(t *testing.T) {
	root, l := newLocal(t)
	if err := l.WriteFile("deep/new/f.txt", []byte("draft\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := l.ReadFile("deep/new/f.txt", 0)
	if err != nil || string(b) != "draft\n" {
		t.Fatalf("read back %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(root, "deep")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a draft write reached the disk: %v", err)
	}
	if _, err := l.ReadFile("a.txt", 3); !errors.Is(err, agent.ErrTooLarge) {
		t.Fatalf("over the limit: %v, want ErrTooLarge", err)
	}
	if _, err := l.ReadFile("deep", 0); err == nil {
		t.Fatal("reading a directory succeeded")
	}
	infos, err := l.ReadDir("")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range infos {
		names = append(names, i.Name)
	}
	if strings.Join(names, ",") != "a.txt,deep,escape" {
		t.Fatalf("listing %v", names)
	}
	st, err := l.Status()
	if err != nil || len(st) != 1 || st[0].Path != "deep/new/f.txt" || st[0].Change != overlay.StatusAdded {
		t.Fatalf("status %+v %v", st, err)
	}
	if err := l.Discard([]string{"deep"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Stat("deep/new/f.txt"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after discard: %v", err)
	}
}

func TestLocalResolve(t *testing.T) {
	root, l := newLocal(t)
	for p, want := range map[string]string{"a.txt": "a.txt", filepath.Join(root, "a.txt"): "a.txt", "./x/../a.txt": "a.txt", root: ""} {
		if got, err := l.Resolve(p); err != nil || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", p, got, err, want)
		}
	}
	for _, p := range []string{"../x", "/etc/passwd", "escape/passwd", root + "/../x"} {
		if _, err := l.Resolve(p); !errors.Is(err, overlay.ErrOutside) {
			t.Errorf("Resolve(%q): %v, want ErrOutside", p, err)
		}
	}
}

func TestLocalWatch(t *testing.T) {
	_, l := newLocal(t)
	got := make(chan string, 16)
	stop := l.Watch(func(k string) { got <- k })
	defer stop()
	if err := l.WriteFile("a.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case k := <-got:
		if k != "a.txt" {
			t.Fatalf("watch reported %q", k)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no change reported")
	}
}
