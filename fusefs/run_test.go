package fusefs

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// runCommand makes the test binary call Run: WORKSPACE MOUNT CMD...;
// it exits with CMD's status.
const runCommand = "__run-test"

func runForTest(args []string) int {
	code, err := Run(args[0], args[1], args[2:], [3]*os.File{os.Stdin, os.Stdout, os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 99
	}
	return code
}

// runCapture calls Run and returns CMD's output and status.
func runCapture(t *testing.T, m *mounted, args ...string) (string, int) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&out, r); close(done) }()
	code, err := Run(m.root, m.mnt, args, [3]*os.File{nil, w, w})
	w.Close()
	<-done
	r.Close()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out.String(), code
}

func TestRun(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"a.txt": "disk\n", "sub/b.txt": "b\n"}})
	before := snapshot(t, m.root)
	if err := os.WriteFile(filepath.Join(m.mnt, "a.txt"), []byte("draft\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The working directory inside the workspace is kept, seen through
	// the view; absolute paths of the workspace reach the view too.
	t.Chdir(filepath.Join(m.root, "sub"))
	script := fmt.Sprintf(`pwd; cat ../a.txt; cat %s/a.txt; echo made > new.txt; echo abs > %s/abs.txt; exit 3`, m.root, m.root)
	out, code := runCapture(t, m, "sh", "-c", script)
	want := fmt.Sprintf("%s\ndraft\ndraft\n", filepath.Join(m.root, "sub"))
	if out != want || code != 3 {
		t.Errorf("run: %q, status %d; want %q, status 3", out, code, want)
	}
	mustRead(t, filepath.Join(m.mnt, "sub/new.txt"), "made\n")
	mustRead(t, filepath.Join(m.mnt, "abs.txt"), "abs\n")
	unchanged(t, m, before)
	hasStatus(t, m, "added sub/new.txt", "added abs.txt", "modified a.txt")

	if _, code := runCapture(t, m, "no-such-command-here"); code != exitNotFound {
		t.Errorf("a missing command: status %d, want %d", code, exitNotFound)
	}
	if _, code := runCapture(t, m, "sh", "-c", "kill -TERM $$"); code != 128+int(syscall.SIGTERM) {
		t.Errorf("a command killed by SIGTERM: status %d, want %d", code, 128+int(syscall.SIGTERM))
	}
	// The namespace was private: this process still sees the disk.
	mustRead(t, filepath.Join(m.root, "a.txt"), "disk\n")
}

func TestRunRefusesOtherDirectories(t *testing.T) {
	m := testMount(t, mountOptions{})
	if _, err := Run(m.root, t.TempDir(), []string{"true"}, [3]*os.File{}); err == nil || !strings.Contains(err.Error(), "not a draftfs mount") {
		t.Errorf("Run over a plain directory: %v", err)
	}
}

// TestRunUnprivileged runs Run as user nobody, which gets its mount
// namespace inside a user namespace of its own.
func TestRunUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to another user")
	}
	m := testMount(t, mountOptions{allowOther: true, rootMode: 0o777, files: map[string]string{"a.txt": "disk\n"}})
	// nobody must reach the workspace, the mount and this binary.
	for dir := m.root; dir != "/"; dir = filepath.Dir(dir) {
		if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o005 != 0o005 {
			if err := os.Chmod(dir, fi.Mode().Perm()|0o005); err != nil {
				t.Fatal(err)
			}
		}
	}
	bin := filepath.Join(t.TempDir(), "fusefs.test")
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("id -u; cat %s/a.txt; echo by-nobody > %s/n.txt", m.root, m.root)
	cmd := exec.Command(bin, runCommand, m.root, m.mnt, "sh", "-c", script)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "cannot create a user namespace") {
		t.Skipf("unprivileged user namespaces are off here: %s", out)
	}
	if err != nil {
		t.Fatalf("run as nobody: %v\n%s", err, out)
	}
	if want := "65534\ndisk\n"; string(out) != want {
		t.Errorf("run as nobody printed %q, want %q", out, want)
	}
	mustRead(t, filepath.Join(m.mnt, "n.txt"), "by-nobody\n")
	if st := lstat(t, filepath.Join(m.mnt, "n.txt")); st.Uid != 65534 {
		t.Errorf("file made by nobody belongs to %d", st.Uid)
	}
	if _, err := os.Stat(filepath.Join(m.root, "n.txt")); !os.IsNotExist(err) {
		t.Errorf("the disk got the file: %v", err)
	}
}
