package control

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/draftfs/draftfs/protocol/control/controltest"
)

func init() {
	// The child of TestClientRefusesForeignSocket: another user's
	// process listening where a daemon's socket would be.
	controltest.Child()
}

// TestClientRefusesForeignSocket: where another user made the socket
// directory, can write to it, or listens behind a socket that looks like
// ours, the client refuses before sending anything and says why.
func TestClientRefusesForeignSocket(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a listener as another user")
	}
	top, err := os.MkdirTemp("", "dfs-foreign")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	os.Chmod(top, 0o755)
	// The other user's directory, as /tmp/draftfs-UID made first by
	// someone else would be.
	otherDir := filepath.Join(top, "other")
	must(t, os.Mkdir(otherDir, 0o700))
	must(t, os.Chown(otherDir, controltest.OtherUID, controltest.OtherUID))
	for _, c := range []struct {
		name   string
		listen string // where the other user listens
		dial   string // where the client connects
		setup  func(t *testing.T)
		want   string
	}{
		{
			name: "their directory", listen: filepath.Join(otherDir, "a.sock"), dial: filepath.Join(otherDir, "a.sock"),
			want: "belongs to uid 65534",
		},
		{
			name: "a directory others can write", listen: filepath.Join(top, "open", "b.sock"), dial: filepath.Join(top, "open", "b.sock"),
			setup: func(t *testing.T) {
				os.Mkdir(filepath.Join(top, "open"), 0o777)
				os.Chmod(filepath.Join(top, "open"), 0o777)
			},
			want: "can be written by other users",
		},
		{
			// The socket file is ours in our private directory (a hard
			// link, given to us), but the other user's process accepts.
			name: "their listener", listen: filepath.Join(otherDir, "c.sock"), dial: filepath.Join(top, "mine", "c.sock"),
			setup: func(t *testing.T) { must(t, os.Mkdir(filepath.Join(top, "mine"), 0o700)) },
			want:  "runs as uid 65534",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.setup != nil {
				c.setup(t)
			}
			l := controltest.ListenAsOther(t, c.listen)
			if c.dial != c.listen {
				must(t, os.Link(c.listen, c.dial))
				must(t, os.Lchown(c.dial, 0, 0))
			}
			cl, err := Dial(c.dial)
			if err == nil {
				// What an editor would send first; no answer comes.
				cl.rpc.Notify(t.Context(), "buffer/didOpen", map[string]any{"path": "secret.go", "version": 1, "text": "unsaved secret"})
				cl.Close()
			}
			received := l.Received()
			if !errors.Is(err, ErrForeignSocket) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing was sent") {
				t.Errorf("dial: %v, want ErrForeignSocket saying %q", err, c.want)
			}
			if received != 0 {
				t.Errorf("the other user's listener received %d bytes", received)
			}
		})
	}
}
