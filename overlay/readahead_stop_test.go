//go:build linux

package overlay

import (
	"testing"

	"github.com/draftfs/draftfs/overlay/beneath"
)

// TestReadaheadAfterStop: a cold read after the workspace closed (a
// straggling request) queues nothing and does not panic; nor does a
// workspace without reading ahead.
func TestReadaheadAfterStop(t *testing.T) {
	root, err := beneath.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	r := newReadahead(root)
	r.note("a/b")
	r.stop()
	r.note("c/d")
	var none *readahead
	none.note("e/f")
}
