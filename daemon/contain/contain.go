//go:build linux

package contain

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Spec describes the namespace a command runs in.
type Spec struct {
	// Workspace is the workspace's path (absolute, symlinks resolved):
	// it shows View inside.
	Workspace string
	// View is a draftfs mount of the workspace's draft.
	View string
	// Hide lists directories hidden behind an empty tmpfs inside (the
	// state root, the directory of the control sockets).
	Hide []string
	// Binds are files or directories bound in after hiding: Binds[i][0]
	// appears at Binds[i][1].
	Binds [][2]string
	// Dir is the command's working directory inside.
	Dir string
	// Terminal keeps the caller's session (see the package
	// documentation); without it the command gets a session of its own.
	Terminal bool
	// Helper is the program that execs the command inside: it must hand
	// the arguments after HelperCommand to [Exec]. It must be reachable
	// at that path inside.
	Helper string
}

// HelperCommand is the hidden command line verb under which Spec.Helper
// must call [Exec]: "HELPER __exec [--ready-fd N] -- CMD [ARGS...]".
const HelperCommand = "__exec"

// Exit statuses of the helper when CMD could not be started, as a shell
// uses them.
const (
	exitNotRunnable = 126 // CMD exists but cannot be executed
	exitNotFound    = 127 // CMD was not found
)

// ErrSetup: the namespace could not be set up.
var ErrSetup = errors.New("could not set up the namespace")

// Cmd is a command prepared to run in a namespace.
type Cmd struct {
	*exec.Cmd
	ready, readyW *os.File // the helper writes a byte on readyW once inside
}

// Command prepares args to run in the namespace spec describes.
func Command(spec Spec, args []string) (*Cmd, error) {
	if len(args) == 0 {
		return nil, errors.New("contain: no command given")
	}
	bwrap, err := Check()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("contain: %w", err)
	}
	cmd := exec.Command(bwrap, append(bwrapArgs(spec, 3), args...)...)
	cmd.ExtraFiles = []*os.File{w}
	return &Cmd{Cmd: cmd, ready: r, readyW: w}, nil
}

// Args is the command line that runs args in the namespace spec
// describes, for callers that start and wait for it themselves (the
// ACP proxy): bwrap's path first. bwrap reports its own setup failures
// on stderr and exits 1.
func Args(spec Spec, args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, errors.New("contain: no command given")
	}
	bwrap, err := Check()
	if err != nil {
		return nil, err
	}
	return append(append([]string{bwrap}, bwrapArgs(spec, -1)...), args...), nil
}

// bwrapArgs is bwrap's command line up to the command's arguments;
// readyFD is the helper's descriptor of the ready pipe, -1 for none.
func bwrapArgs(spec Spec, readyFD int) []string {
	a := []string{
		"--unshare-user", "--unshare-pid", "--die-with-parent",
		"--dev-bind", "/", "/",
		"--proc", "/proc",
		"--bind", spec.View, spec.Workspace,
	}
	for _, h := range spec.Hide {
		a = append(a, "--tmpfs", h)
	}
	for _, b := range spec.Binds {
		a = append(a, "--bind", b[0], b[1])
	}
	a = append(a, "--cap-drop", "ALL")
	if !spec.Terminal {
		a = append(a, "--new-session")
	}
	a = append(a, "--chdir", spec.Dir, "--", spec.Helper, HelperCommand)
	if readyFD >= 0 {
		a = append(a, "--ready-fd", strconv.Itoa(readyFD))
	}
	return append(a, "--")
}

// Start starts the command. Terminal signals (SIGINT, SIGQUIT) must be
// ignored in this process meanwhile (see the package documentation):
// bwrap inherits that, the command inside does not.
func (c *Cmd) Start() error {
	err := c.Cmd.Start()
	c.readyW.Close()
	if err != nil {
		c.ready.Close()
		return fmt.Errorf("contain: start bwrap: %w", err)
	}
	return nil
}

// Wait waits for the command and returns its exit status (128+N when
// signal N killed it), or an error wrapping [ErrSetup] when bwrap
// failed before the command started (bwrap said why on stderr).
func (c *Cmd) Wait() (int, error) {
	err := c.Cmd.Wait()
	var b [1]byte
	n, _ := c.ready.Read(b[:])
	c.ready.Close()
	if n == 0 {
		return 0, fmt.Errorf("contain: %w (bwrap's message is above)%s", ErrSetup, hintUserns())
	}
	return exitCode(err)
}

func exitCode(err error) (int, error) {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return exit.ExitCode(), nil
	}
	if err != nil {
		return 0, fmt.Errorf("contain: %w", err)
	}
	return 0, nil
}

// Check says whether commands can be contained here: it returns bwrap's
// path, or an error saying what is missing and how to get it.
func Check() (string, error) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return "", errors.New("contain: bubblewrap (bwrap) is not installed: install it (Debian, Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap)")
	}
	if msg := usernsProblem(); msg != "" {
		return "", errors.New("contain: " + msg)
	}
	return bwrap, nil
}

// usernsProblem says why this process cannot create a user namespace,
// "" when nothing known stands in the way.
func usernsProblem() string {
	if readSysctl("user/max_user_namespaces") == "0" {
		return "user namespaces are disabled (sysctl user.max_user_namespaces is 0): enable them with sysctl -w user.max_user_namespaces=15000 (as root)"
	}
	if euid() == 0 {
		return ""
	}
	if readSysctl("kernel/unprivileged_userns_clone") == "0" {
		return "this kernel keeps user namespaces from ordinary users (sysctl kernel.unprivileged_userns_clone is 0): allow them with sysctl -w kernel.unprivileged_userns_clone=1 (as root), or run as root"
	}
	if readSysctl("kernel/apparmor_restrict_unprivileged_userns") == "1" {
		return "AppArmor keeps ordinary users from creating user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns is 1, as on Ubuntu 23.10 and later): give bwrap an AppArmor profile that allows userns (see draftfs's README), or run as root"
	}
	return ""
}

// euid is os.Geteuid (tests change it).
var euid = os.Geteuid

// hintUserns adds what may have stopped bwrap to ErrSetup's message.
func hintUserns() string {
	if msg := usernsProblem(); msg != "" {
		return ": " + msg
	}
	return ""
}

// sysctlDir is where the kernel's settings are read (tests change it).
var sysctlDir = "/proc/sys"

func readSysctl(name string) string {
	b, err := os.ReadFile(filepath.Join(sysctlDir, name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
