//go:build linux

package contain

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestUsernsProblem: each kernel setting that keeps users from having
// a user namespace is named, with the fix.
func TestUsernsProblem(t *testing.T) {
	cases := []struct {
		settings map[string]string
		root     bool
		want     string // "" : no problem
	}{
		{map[string]string{"user/max_user_namespaces": "15000"}, false, ""},
		{map[string]string{"user/max_user_namespaces": "0"}, true, "sysctl -w user.max_user_namespaces="},
		{map[string]string{"kernel/unprivileged_userns_clone": "0"}, false, "sysctl -w kernel.unprivileged_userns_clone=1"},
		{map[string]string{"kernel/unprivileged_userns_clone": "0"}, true, ""},
		{map[string]string{"kernel/apparmor_restrict_unprivileged_userns": "1"}, false, "AppArmor"},
		{map[string]string{"kernel/apparmor_restrict_unprivileged_userns": "0"}, false, ""},
	}
	saved, savedEuid := sysctlDir, euid
	defer func() { sysctlDir, euid = saved, savedEuid }()
	for _, c := range cases {
		sysctlDir = t.TempDir()
		for name, v := range c.settings {
			p := filepath.Join(sysctlDir, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		euid = func() int {
			if c.root {
				return 0
			}
			return 1000
		}
		got := usernsProblem()
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%v (root %v): %q, want %q", c.settings, c.root, got, c.want)
		}
	}
}

// TestBwrapArgs: the namespace's mounts come in the order that keeps
// the view and the hidden state right, and the session is kept only on
// a terminal.
func TestBwrapArgs(t *testing.T) {
	spec := Spec{Workspace: "/ws", View: "/st/x/mnt/main", Hide: []string{"/st"}, Binds: [][2]string{{"/st/x/agent.sock", "/st/x/control.sock"}}, Dir: "/ws/sub", Helper: "/bin/draftfs"}
	a := bwrapArgs(spec, 3)
	index := func(s ...string) int {
		for i := range a {
			if slices.Equal(a[i:min(i+len(s), len(a))], s) {
				return i
			}
		}
		t.Fatalf("%v lacks %v", a, s)
		return -1
	}
	for _, must := range [][]string{{"--unshare-user"}, {"--unshare-pid"}, {"--die-with-parent"}, {"--proc", "/proc"}, {"--cap-drop", "ALL"}, {"--new-session"}, {"--chdir", "/ws/sub"}} {
		index(must...)
	}
	root, view, hide, bind := index("--dev-bind", "/", "/"), index("--bind", "/st/x/mnt/main", "/ws"), index("--tmpfs", "/st"), index("--bind", "/st/x/agent.sock", "/st/x/control.sock")
	if !(root < view && view < hide && hide < bind) {
		t.Errorf("mount order: %v", a)
	}
	if !slices.Equal(a[len(a)-5:], []string{"/bin/draftfs", HelperCommand, "--ready-fd", "3", "--"}) {
		t.Errorf("helper: %v", a)
	}
	spec.Terminal = true
	if slices.Contains(bwrapArgs(spec, -1), "--new-session") {
		t.Error("--new-session on a terminal: Ctrl-C and job control would not reach the command")
	}
}
