package fusefs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/draftfs/draftfs/overlay"
)

func TestZZStress(t *testing.T) {
	m := testMount(t, mountOptions{})
	p := filepath.Join(m.mnt, "w.txt")
	re := regexp.MustCompile(`^(gen \d+\n)?$`)
	stop := time.Now().Add(2 * time.Second)
	var wg sync.WaitGroup
	writes, estale := 0, 0
	wg.Add(3)
	{
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				time.Sleep(20 * time.Millisecond)
				m.d.Commit(overlay.CommitOptions{Source: overlay.SourceCLI})
			}
		}()
	}
	go func() {
		defer wg.Done()
		for i := 0; time.Now().Before(stop); i++ {
			if err := os.WriteFile(p, fmt.Appendf(nil, "gen %d\n", i%90+10), 0o644); err != nil {
				estale++
			}
			writes++
		}
	}()
	bad := 0
	defer func() { t.Logf("writes %d estale %d", writes, estale) }()
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
