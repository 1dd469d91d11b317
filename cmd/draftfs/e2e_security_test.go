package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/draftfs/draftfs/protocol/control/controltest"
)

// TestSetidFromAnotherUser: in an --allow-other mount another user
// copies a program in and makes it set-uid and set-gid. status and diff
// show it, and a commit by root refuses it, naming the path and the
// flag, until asked with --allow-setid and --allow-owner.
func TestSetidFromAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the commit that would make the program root's")
	}
	f := newFixture(t)
	mnt := filepath.Join(f.tmp, "mnt")
	for _, d := range []string{f.tmp, f.ws, mnt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o755)
	}
	os.Chmod(f.ws, 0o777)
	f.serve(mnt, "--allow-other")
	c := exec.Command("/bin/sh", "-c", "cp /bin/true prog && chmod 6755 prog")
	c.Dir = mnt
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: controltest.OtherUID, Gid: controltest.OtherUID}}
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("the other user's copy: %v: %s", err, out)
	}

	if r := f.ok("status"); !strings.Contains(r.out, "A prog (mode 106755) (owner 0:0 -> 65534:65534)\n") {
		t.Errorf("status: %q", r.out)
	}
	if r := f.ok("status", "--json"); !strings.Contains(r.out, `"newMode": "106755"`) || !strings.Contains(r.out, `"newOwner": "65534:65534"`) {
		t.Errorf("status --json: %s", r.out)
	}
	if r := f.ok("diff"); !strings.Contains(r.out, "new file mode 106755\nold owner 0:0\nnew owner 65534:65534\n") {
		t.Errorf("diff: %s", r.out)
	}
	r := f.run("commit")
	if r.code != 1 || !strings.Contains(r.err, "C prog: ") || !strings.Contains(r.err, "--allow-setid") {
		t.Fatalf("commit: %s, want a refusal naming prog and --allow-setid", r)
	}
	if _, err := os.Lstat(filepath.Join(f.ws, "prog")); !os.IsNotExist(err) {
		t.Fatalf("the refused commit wrote prog: %v", err)
	}
	if r := f.run("commit", "--force"); r.code != 1 {
		t.Fatalf("commit --force: %s, want a refusal", r)
	}
	f.ok("commit", "--allow-setid", "--allow-owner")
	fi, err := os.Lstat(filepath.Join(f.ws, "prog"))
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode() != 0o755|os.ModeSetuid|os.ModeSetgid || st.Uid != controltest.OtherUID || st.Gid != controltest.OtherUID {
		t.Fatalf("prog after --allow-setid --allow-owner: %v %d:%d", fi.Mode(), st.Uid, st.Gid)
	}
}

// TestRefusedMountCreatesNothing: draftfs mount of a path inside the
// workspace is refused before anything is made there.
func TestRefusedMountCreatesNothing(t *testing.T) {
	needFUSE(t)
	f := newFixture(t)
	f.file("keep.txt", "k\n")
	r := f.run("mount", filepath.Join(f.ws, "a", "b", "c"))
	if r.code == 0 || !strings.Contains(r.err, "inside the workspace") {
		t.Fatalf("mount inside the workspace: %s", r)
	}
	ents, err := os.ReadDir(f.ws)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "keep.txt" {
		t.Fatalf("the refused mount left %v in the workspace", ents)
	}
}
