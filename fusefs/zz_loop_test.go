package fusefs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

func TestZZLoopback(t *testing.T) {
	dir := t.TempDir()
	mnt := t.TempDir()
	root, err := gofs.NewLoopbackRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	sec := time.Hour
	srv, err := gofs.Mount(mnt, root, &gofs.Options{EntryTimeout: &sec, AttrTimeout: &sec, MountOptions: fuse.MountOptions{DisabledCapabilities: fuse.CAP_PASSTHROUGH}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Unmount()
	p := filepath.Join(mnt, "w.txt")
	re := regexp.MustCompile(`^(gen \d+\n)?$`)
	stop := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; time.Now().Before(stop); i++ {
			if err := os.WriteFile(p, fmt.Appendf(nil, "gen %d\n", i%90+10), 0o644); err != nil {
				t.Errorf("write: %v", err)
				return
			}
		}
	}()
	bad := 0
	go func() {
		defer wg.Done()
		for time.Now().Before(stop) {
			b, err := os.ReadFile(p)
			if err == nil && !re.Match(b) {
				bad++
				if bad < 5 {
					t.Errorf("read %q", b)
				}
			}
		}
	}()
	wg.Wait()
	t.Logf("bad %d", bad)
}
