package fusefs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// RunChildCommand is the hidden command line verb under which the
// program that calls [Run] must call [RunChild]: Run starts
// "/proc/self/exe __run-child ARGS..." and RunChild gets ARGS.
const RunChildCommand = "__run-child"

// Exit statuses of the helper when CMD could not be started, as a shell
// uses them.
const (
	exitSetup       = 125 // the namespace could not be set up
	exitNotRunnable = 126 // CMD exists but cannot be executed
	exitNotFound    = 127 // CMD was not found
)

// Run runs args in a private mount namespace in which the workspace's own
// path shows the merged view served at mountDir, a draftfs mount of that
// workspace, and returns args' exit status (128+n when killed by signal
// n). The caller's working directory is kept, seen through the view when
// it lies in the workspace. As root the namespace is created directly;
// other users get one inside a new user namespace (their ids mapped to
// themselves), where the kernel allows that.
//
// Run starts a helper process, this program again with RunChildCommand
// as its first argument: its main must hand such invocations to
// RunChild. While args run, SIGINT and SIGQUIT are ignored here (the
// terminal sends them to args too) and SIGTERM and SIGHUP are passed on.
func Run(workspace, mountDir string, args []string, stdio [3]*os.File) (int, error) {
	if len(args) == 0 {
		return 0, errors.New("fusefs: run: no command given")
	}
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return 0, fmt.Errorf("fusefs: run: workspace %s: %w", workspace, err)
	}
	mnt, err := filepath.Abs(mountDir)
	if err != nil {
		return 0, fmt.Errorf("fusefs: run: mount %s: %w", mountDir, err)
	}
	m, err := findMount(mnt)
	if err != nil {
		return 0, err
	}
	if m == nil || m.fsType != fsType {
		return 0, fmt.Errorf("fusefs: run: %s is not a draftfs mount", mnt)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return 0, fmt.Errorf("fusefs: run: working directory: %w", err)
	}
	cmd := exec.Command("/proc/self/exe", append([]string{RunChildCommand, ws, mnt, cwd, "--"}, args...)...)
	cmd.Args[0] = "draftfs"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio[0], stdio[1], stdio[2]
	cmd.SysProcAttr = runAttr(os.Geteuid(), os.Getegid())

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		if cmd.SysProcAttr.Cloneflags&syscall.CLONE_NEWUSER != 0 {
			return 0, fmt.Errorf("fusefs: run: cannot create a user namespace (%v): this kernel does not let unprivileged users have one (see sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone and AppArmor's restrict_unprivileged_userns); run as root instead", err)
		}
		return 0, fmt.Errorf("fusefs: run: start: %w", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	for {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGTERM || sig == syscall.SIGHUP {
				cmd.Process.Signal(sig)
			}
		case err := <-waited:
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					return 128 + int(ws.Signal()), nil
				}
				return exit.ExitCode(), nil
			}
			if err != nil {
				return 0, fmt.Errorf("fusefs: run: %w", err)
			}
			return 0, nil
		}
	}
}

// runAttr is how the helper is started: in a new mount namespace, and a
// new user namespace for users other than root, keeping CAP_SYS_ADMIN
// in it across exec so the helper can mount.
func runAttr(uid, gid int) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	if uid != 0 {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
	return attr
}

// RunChild is the helper side of [Run], with the arguments after
// RunChildCommand: WORKSPACE MOUNT CWD -- CMD [ARGS...]. It binds MOUNT
// over WORKSPACE in its (new, private) mount namespace, enters CWD again
// so that a directory inside the workspace is seen through the view,
// drops the capabilities it was given and executes CMD. It returns only
// on failure, with a shell's exit status for it.
func RunChild(args []string) int {
	if len(args) < 5 || args[3] != "--" {
		fmt.Fprintf(os.Stderr, "draftfs: %s: usage: WORKSPACE MOUNT CWD -- CMD [ARGS...]\n", RunChildCommand)
		return exitSetup
	}
	ws, mnt, cwd, cmd := args[0], args[1], args[2], args[4:]
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "draftfs: run: "+format+"\n", a...)
		return code
	}
	// Nothing mounted here may reach the parent namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fail(exitSetup, "make mounts private: %v", err)
	}
	if err := unix.Mount(mnt, ws, "", unix.MS_BIND, ""); err != nil {
		return fail(exitSetup, "bind %s over %s: %v", mnt, ws, err)
	}
	if err := os.Chdir(cwd); err != nil {
		return fail(exitSetup, "enter %s: %v", cwd, err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fail(exitSetup, "drop capabilities: %v", err)
	}
	path, err := exec.LookPath(cmd[0])
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return fail(exitNotFound, "%s: command not found", cmd[0])
		}
		return fail(exitNotRunnable, "%v", err)
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PWD=") })
	err = syscall.Exec(path, cmd, append(env, "PWD="+cwd))
	return fail(exitNotRunnable, "%s: %v", cmd[0], err)
}
