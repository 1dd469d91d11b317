//go:build linux

package fusefs

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// TestKillPriv checks that writes, truncates and chowns clear set-id
// bits through the mount exactly as on a plain directory: the mount has
// HANDLE_KILLPRIV_V2, so the server does it, not the kernel.
func TestKillPriv(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs commands as another user")
	}
	const nobody = 65534
	cases := []struct {
		name   string
		dir    bool
		mode   fs.FileMode
		uid    int // who runs script, in group uid, or group 0 when inRoot
		inRoot bool
		script string
		want   fs.FileMode // on a plain directory (checked too)
	}{
		{"write by user", false, 0o777 | fs.ModeSetuid | fs.ModeSetgid, nobody, false, "printf x >> f", 0o777},
		{"write by user, setgid without group exec", false, 0o767 | fs.ModeSetgid, nobody, false, "printf x >> f", 0o767},
		{"write by user in the file's group, setgid without group exec", false, 0o767 | fs.ModeSetgid, nobody, true, "printf x >> f", 0o767 | fs.ModeSetgid},
		{"truncate by user in the file's group", false, 0o777 | fs.ModeSetuid | fs.ModeSetgid, nobody, true, "truncate -s 1 f", 0o777},
		{"write by root", false, 0o777 | fs.ModeSetuid | fs.ModeSetgid, 0, false, "printf x >> f", 0o777 | fs.ModeSetuid | fs.ModeSetgid},
		{"truncate by user", false, 0o777 | fs.ModeSetuid | fs.ModeSetgid, nobody, false, "truncate -s 1 f", 0o777},
		{"open O_TRUNC by user", false, 0o777 | fs.ModeSetuid, nobody, false, ": > f", 0o777},
		{"truncate by root", false, 0o777 | fs.ModeSetuid, 0, false, "truncate -s 1 f", 0o777 | fs.ModeSetuid},
		{"chown by root", false, 0o755 | fs.ModeSetuid | fs.ModeSetgid, 0, false, "chown 0:0 f", 0o755},
		{"chown by root, setgid without group exec", false, 0o745 | fs.ModeSetgid, 0, false, "chown 0:0 f", 0o745 | fs.ModeSetgid},
		{"chown of a directory", true, 0o755 | fs.ModeSetgid, 0, false, "chown 0:0 f", 0o755 | fs.ModeSetgid},
		{"write by user, no set-id bits", false, 0o777, nobody, false, "printf x >> f", 0o777},
	}
	m := testMount(t, mountOptions{allowOther: true})
	native := t.TempDir()
	for _, d := range []string{filepath.Dir(m.mnt), filepath.Dir(filepath.Dir(m.mnt)), native, filepath.Dir(native)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]fs.FileMode{}
			for _, root := range []string{native, m.mnt} {
				dir, err := os.MkdirTemp(root, "case")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(dir, 0o777); err != nil {
					t.Fatal(err)
				}
				f := filepath.Join(dir, "f")
				if c.dir {
					err = os.Mkdir(f, 0o755)
				} else {
					err = os.WriteFile(f, []byte("content\n"), 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(f, c.mode); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command("sh", "-c", c.script)
				cmd.Dir = dir
				if c.uid != 0 {
					gid := uint32(c.uid)
					if c.inRoot {
						gid = 0
					}
					cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(c.uid), Gid: gid}}
				}
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%s in %s: %v: %s", c.script, root, err, out)
				}
				fi, err := os.Stat(f)
				if err != nil {
					t.Fatal(err)
				}
				got[root] = fi.Mode() &^ fs.ModeDir
			}
			if got[native] != c.want {
				t.Errorf("plain directory: mode %v, the case expects %v", got[native], c.want)
			}
			if got[m.mnt] != got[native] {
				t.Errorf("mount: mode %v, plain directory: %v", got[m.mnt], got[native])
			}
		})
	}
}
