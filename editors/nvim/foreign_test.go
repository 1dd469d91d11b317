package nvim_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/draftfs/draftfs/protocol/control/controltest"
)

// foreignLua opens a file with unsaved text, the socket given, and
// prints what the plugin told the user.
const foreignLua = `
local msgs = {}
vim.notify = function(m) table.insert(msgs, m) end
require('draftfs').setup({ socket = os.getenv('SOCK'), workspace = os.getenv('WS') })
vim.cmd('edit ' .. os.getenv('WS') .. '/secret.go')
vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'unsaved secret' })
vim.wait(5000, function() return #msgs > 0 end, 50)
io.stdout:write('told: ' .. table.concat(msgs, ' | ') .. '\n')
vim.cmd('qa!')
`

// TestForeignSocket: when another user made the socket's directory, or
// listens behind a socket that looks like ours, the plugin sends no
// buffer text and tells the user why.
func TestForeignSocket(t *testing.T) {
	if nvim == "" {
		t.Skip("nvim is not installed")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a listener as another user")
	}
	top, err := os.MkdirTemp("", "dfnv-foreign")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	os.Chmod(top, 0o755)
	other, mine, ws := filepath.Join(top, "other"), filepath.Join(top, "mine"), filepath.Join(top, "ws")
	for _, d := range []string{other, mine, ws} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.Chown(other, controltest.OtherUID, controltest.OtherUID)
	script := filepath.Join(top, "foreign.lua")
	if err := os.WriteFile(script, []byte(foreignLua), 0o644); err != nil {
		t.Fatal(err)
	}
	plugin, _ := filepath.Abs(".")
	for _, c := range []struct{ name, listen, dial, want string }{
		{"their directory", filepath.Join(other, "a.sock"), filepath.Join(other, "a.sock"), "belongs to uid 65534"},
		{"their listener", filepath.Join(other, "b.sock"), filepath.Join(mine, "b.sock"), "runs as uid 65534"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := controltest.ListenAsOther(t, c.listen)
			if c.dial != c.listen {
				// Our socket in our directory, but their process behind it.
				if err := os.Link(c.listen, c.dial); err != nil {
					t.Fatal(err)
				}
				os.Lchown(c.dial, 0, 0)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n",
				"--cmd", "set rtp+="+plugin, "-c", "luafile "+script)
			cmd.Env = append(os.Environ(), "SOCK="+c.dial, "WS="+ws, "DRAFTFS_BIN="+bin)
			told, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("nvim: %v: %s", err, told)
			}
			received := l.Received()
			if !strings.Contains(string(told), c.want) || !strings.Contains(string(told), "nothing was sent") {
				t.Errorf("the plugin told: %s; want %q", told, c.want)
			}
			if received != 0 {
				t.Errorf("the other user's listener received %d bytes", received)
			}
		})
	}
}
