// Package nvim_test runs the Neovim plugin's tests (tests/*_test.lua) in
// headless Neovim against the real draftfs binary, built once by
// TestMain: each Lua file runs in its own Neovim, which starts its own
// daemons (`draftfs serve`, with --mount when FUSE works) and exits
// non-zero when a case fails.
package nvim_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/draftfs/draftfs/protocol/control/controltest"
)

// nvim is Neovim's path, "" when it is not installed; bin is the draftfs
// binary TestMain builds when it is.
var nvim, bin string

func TestMain(m *testing.M) {
	controltest.Child() // the other user's listener of TestForeignSocket
	nvim, _ = exec.LookPath("nvim")
	if nvim == "" {
		os.Exit(m.Run()) // TestNeovim skips, saying why
	}
	dir, err := os.MkdirTemp("", "draftfs-nvim-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "draftfs")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/draftfs/draftfs/cmd/draftfs").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build draftfs: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fuseWorks reports whether this process can mount (FUSE tests run).
func fuseWorks() bool {
	fd, err := syscall.Open("/dev/fuse", syscall.O_RDWR, 0)
	if err != nil {
		return false
	}
	syscall.Close(fd)
	return true
}

func TestNeovim(t *testing.T) {
	if nvim == "" {
		t.Skip("nvim is not installed (scripts/test.sh installs Debian's neovim): the Neovim plugin is not tested")
	}
	plugin, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(plugin, "tests", "*_test.lua"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no tests/*_test.lua in %s (%v)", plugin, err)
	}
	mount := fuseWorks()
	if !mount {
		t.Log("FUSE is not available: the tests check the daemon's view, not a mount's")
	}
	for _, file := range files {
		file := file
		t.Run(strings.TrimSuffix(filepath.Base(file), "_test.lua"), func(t *testing.T) {
			t.Parallel()
			runLua(t, plugin, file, mount)
		})
	}
}

// runLua runs one test file in headless Neovim and fails t if it fails,
// leaves a mount behind or outlives its time.
func runLua(t *testing.T, plugin, file string, mount bool) {
	// A short path keeps the control socket inside the state directory.
	tmp, err := os.MkdirTemp("", "dfnv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n",
		"--cmd", "set rtp+="+plugin, "-c", "luafile "+file)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(),
		"DRAFTFS_BIN="+bin,
		"DRAFTFS_TEST_TMP="+tmp,
		"XDG_CACHE_HOME="+filepath.Join(tmp, "cache"),
		"XDG_STATE_HOME="+filepath.Join(tmp, "xdg-state"),
		"XDG_DATA_HOME="+filepath.Join(tmp, "data"),
		"XDG_CONFIG_HOME="+filepath.Join(tmp, "config"),
	)
	if mount {
		cmd.Env = append(cmd.Env, "DRAFTFS_TEST_MOUNT=1")
	}
	// Neovim and the daemons it starts share a process group, so killing
	// the group after a hung or failed run leaves none of them behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // daemons of a Neovim that failed
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		t.Log(line)
	}
	if ctx.Err() != nil {
		t.Errorf("%s timed out", filepath.Base(file))
	} else if err != nil {
		t.Errorf("%s: %v", filepath.Base(file), err)
	}
	checkMounts(t, tmp)
}

// checkMounts fails t for every mount left below dir, and unmounts it.
func checkMounts(t *testing.T, dir string) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return
	}
	defer f.Close()
	var left []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 1 && strings.HasPrefix(fields[1], dir+"/") {
			left = append(left, fields[1])
		}
	}
	for _, mnt := range left {
		t.Errorf("a mount was left at %s", mnt)
		if out, err := exec.Command(bin, "unmount", mnt).CombinedOutput(); err != nil {
			t.Errorf("draftfs unmount %s: %v: %s", mnt, err, out)
		}
	}
}
