package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/draftfs/draftfs/daemon/mounts"
	"github.com/draftfs/draftfs/daemon/serving"
	"github.com/draftfs/draftfs/fusefs"
	"github.com/draftfs/draftfs/protocol/control"
)

// The end-to-end tests drive the built binary, as a user does.

// bin is the draftfs binary, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	if addr := os.Getenv("DRAFTFS_TEST_DIAL"); addr != "" {
		os.Exit(dialAs(addr)) // a child of TestPeerCheck, as another user
	}
	// The test binary links draftfs's packages, so with cgo it raised
	// its timer slack as draftfs does (package serving): the draftfs
	// processes the tests start must not take its variable for their
	// own parent's.
	os.Unsetenv(serving.EnvSlack)
	dir, err := os.MkdirTemp("", "draftfs-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Chmod(dir, 0o755) // other users run the test binary from here too
	bin = filepath.Join(dir, "draftfs")
	// -buildvcs=auto: the binary names its revision (TestVersion) even
	// where GOFLAGS turns stamping off.
	args := []string{"build", "-buildvcs=auto", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build draftfs: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	release := func() {}
	if os.Getenv("DRAFTFS_TEST_URING") == "1" {
		// Every mount asks for the ring by default: with the kernel's
		// switch on for the run, they all get it.
		if release, err = fusefs.HoldIOURing(); err != nil {
			fmt.Fprintln(os.Stderr, "DRAFTFS_TEST_URING=1:", err)
			os.RemoveAll(dir)
			os.Exit(2)
		}
	}
	code := m.Run()
	release()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fixture is a workspace, its state root and a place for mounts.
type fixture struct {
	t     *testing.T
	ws    string
	state string
	tmp   string
	// cred, when set, is the ordinary user that owns the fixture and
	// runs every draftfs command of it (see userFixture).
	cred *syscall.Credential
	// exe, when set, is the draftfs binary the fixture runs instead of
	// bin.
	exe string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	// Short paths: the socket must fit in sun_path under the state dir.
	tmp, err := os.MkdirTemp("", "dfs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	f := &fixture{t: t, ws: filepath.Join(tmp, "ws"), state: filepath.Join(tmp, "st"), tmp: tmp}
	if err := os.Mkdir(f.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

// file writes a file of the workspace on disk.
func (f *fixture) file(key, text string) {
	f.t.Helper()
	p := filepath.Join(f.ws, key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		f.t.Fatal(err)
	}
	f.own(p)
}

// own gives p and its parents up to the fixture's directory to the
// fixture's user, if it has one.
func (f *fixture) own(p string) {
	if f.cred == nil {
		return
	}
	for ; within(p, f.tmp); p = filepath.Dir(p) {
		if err := os.Lchown(p, int(f.cred.Uid), int(f.cred.Gid)); err != nil {
			f.t.Fatal(err)
		}
	}
}

// disk reads a file of the workspace on disk.
func (f *fixture) disk(key string) string {
	b, err := os.ReadFile(filepath.Join(f.ws, key))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// result is what a command did.
type result struct {
	out, err string
	code     int
}

func (r result) String() string {
	return fmt.Sprintf("status %d, stdout %q, stderr %q", r.code, r.out, r.err)
}

// cmd prepares draftfs with the fixture's global flags.
func (f *fixture) cmd(args ...string) *exec.Cmd {
	exe := bin
	if f.exe != "" {
		exe = f.exe
	}
	return f.as(exec.Command(exe, append([]string{"--workspace", f.ws, "--state", f.state}, args...)...))
}

// as prepares c to run in the workspace as the fixture's user.
func (f *fixture) as(c *exec.Cmd) *exec.Cmd {
	c.Dir = f.ws
	// A race-enabled binary would sleep a second at every exit.
	c.Env = append(os.Environ(), "NO_COLOR=", "GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
	if f.cred != nil {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: f.cred}
		c.Env = append(c.Env, "HOME="+f.tmp, "XDG_RUNTIME_DIR=", "XDG_STATE_HOME=", "USER="+testUser, "LOGNAME="+testUser)
	}
	return c
}

// run runs draftfs to the end, stdin from in.
func (f *fixture) runIn(in string, args ...string) result {
	f.t.Helper()
	return f.finish(f.cmd(args...), in)
}

// finish runs c to the end, stdin from in.
func (f *fixture) finish(c *exec.Cmd, in string) result {
	f.t.Helper()
	var out, errb bytes.Buffer
	c.Stdin, c.Stdout, c.Stderr = strings.NewReader(in), &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		f.t.Fatalf("%v: %v", c.Args, err)
	}
	return result{out.String(), errb.String(), code}
}

func (f *fixture) run(args ...string) result {
	f.t.Helper()
	return f.runIn("", args...)
}

// ok runs draftfs and fails the test unless it exits 0.
func (f *fixture) ok(args ...string) result {
	f.t.Helper()
	r := f.run(args...)
	if r.code != 0 {
		f.t.Fatalf("draftfs %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// server is a running draftfs serve.
type server struct {
	f      *fixture
	cmd    *exec.Cmd
	ready  string // the ready line
	mount  string
	stderr *bytes.Buffer
	exited chan error
}

// needFUSE skips a test that mounts when FUSE cannot work here.
func needFUSE(t *testing.T) {
	t.Helper()
	fd, err := syscall.Open("/dev/fuse", syscall.O_RDWR, 0)
	if err != nil {
		t.Skipf("FUSE is not available (/dev/fuse: %v)", err)
	}
	syscall.Close(fd)
}

// serve starts `draftfs serve` (with a mount when mount is set) and
// waits for its ready line. The cleanup stops it with SIGTERM and fails
// the test if it does not exit 0 or leaves its mount behind.
func (f *fixture) serve(mount string, extra ...string) *server {
	f.t.Helper()
	args := []string{"serve"}
	if mount != "" {
		needFUSE(f.t)
		args = append(args, "--mount", mount)
	}
	d := &server{f: f, mount: mount, stderr: &bytes.Buffer{}, exited: make(chan error, 1)}
	d.cmd = f.cmd(append(args, extra...)...)
	d.cmd.Stderr = d.stderr
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		io.Copy(io.Discard, stdout)
		d.exited <- d.cmd.Wait()
	}()
	select {
	case d.ready = <-lines:
	case err := <-d.exited:
		f.t.Fatalf("draftfs serve exited before it was ready: %v; stderr: %s", err, d.stderr)
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		f.t.Fatalf("draftfs serve printed no ready line; stderr: %s", d.stderr)
	}
	f.t.Cleanup(d.stop)
	return d
}

// stop ends the daemon with SIGTERM (if it still runs) and checks it
// exited 0 and took its mount with it.
func (d *server) stop() {
	t := d.f.t
	if d.cmd.ProcessState == nil {
		d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-d.exited:
			if err != nil {
				t.Errorf("draftfs serve after SIGTERM: %v; stderr: %s", err, d.stderr)
			}
		case <-time.After(30 * time.Second):
			d.cmd.Process.Kill()
			t.Errorf("draftfs serve did not exit after SIGTERM; stderr: %s", d.stderr)
		}
	}
	if d.mount != "" && isMount(d.mount) {
		t.Errorf("%s is still mounted after the daemon ended", d.mount)
		mounts.Unmount(d.mount)
	}
}

// kill ends the daemon with SIGKILL, as a crash would.
func (d *server) kill() {
	d.cmd.Process.Kill()
	<-d.exited
}

// isMount reports whether dir is a mount point.
func isMount(dir string) bool {
	data, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

// client connects to the fixture's daemon.
func (f *fixture) client() *control.Client {
	f.t.Helper()
	c, err := control.Dial(f.socket())
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { c.Close() })
	return c
}

func (f *fixture) socket() string {
	return strings.TrimSpace(f.ok("socket").out)
}
