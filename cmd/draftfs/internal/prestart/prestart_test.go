//go:build linux

package prestart

import (
	"strings"
	"testing"
)

func TestCommand(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"mount /tmp/v", "mount"},
		{"--workspace mount serve", "serve"},
		{"--workspace=ws --state st --draft d mount x", "mount"},
		{"--io-uring=false serve --mount x", "serve"},
		{"--io-uring serve", "serve"},
		{"--draft d run -- mount", "run"},
		{"-- mount", ""},
		{"--state", ""},
		{"", ""},
	} {
		if got := Command(strings.Fields(c.args)); got != c.want {
			t.Errorf("Command(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}
