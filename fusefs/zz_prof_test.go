package fusefs

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/draftfs/draftfs/overlay"
)

func TestZZProf(t *testing.T) {
	root := "/var/tmp/dfsprof/lower"
	state := t.TempDir()
	mnt := t.TempDir()
	ws, err := overlay.Open(overlay.Options{Root: root, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	d, _ := ws.Draft("")
	srv, err := Mount(mnt, d, Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Unmount(); srv.Wait() }()
	for _, c := range []string{os.Getenv("ZZCMD")} {
		for i := 0; i < 8; i++ {
			start := time.Now()
			cmd := exec.Command("sh", "-c", c+" >/dev/null 2>&1; true")
			cmd.Env = append(os.Environ(), "M="+filepath.Join(mnt, "src"))
			cmd.Run()
			t.Logf("%s: %v", c, time.Since(start))
		}
	}
}
