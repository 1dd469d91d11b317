//go:build linux

package contain

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/draftfs/draftfs/daemon/serving"
)

// Exec is the helper side of [Command], inside the namespace, with the
// arguments after HelperCommand: [--ready-fd N] -- CMD [ARGS...]. It
// says on the ready descriptor that the namespace is set up, gives CMD
// the default handling of the terminal's signals back, and execs CMD
// with PWD set to the working directory and the timer slack draftfs was
// started with (see serving.RestoreSlack). It returns only on failure,
// with a shell's exit status for it.
func Exec(args []string) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "draftfs: "+format+"\n", a...)
		return code
	}
	ready := -1
	if len(args) > 1 && args[0] == "--ready-fd" {
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return fail(exitNotRunnable, "%s: bad --ready-fd %q", HelperCommand, args[1])
		}
		ready, args = n, args[2:]
	}
	if len(args) < 2 || args[0] != "--" {
		return fail(exitNotRunnable, "%s: usage: [--ready-fd N] -- CMD [ARGS...]", HelperCommand)
	}
	cmd := args[1:]
	if ready >= 0 {
		syscall.Write(ready, []byte{1})
		syscall.Close(ready)
	}
	path, err := exec.LookPath(cmd[0])
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return fail(exitNotFound, "%s: command not found", cmd[0])
		}
		return fail(exitNotRunnable, "%v", err)
	}
	// bwrap was started with SIGINT and SIGQUIT ignored, which exec
	// would pass on. A signal Go handles is reset to the default by
	// exec: handling them here is what restores them for CMD.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGQUIT)
	// The exec runs on this thread, whose timer slack CMD inherits: the
	// one the draftfs that started bwrap was started with.
	runtime.LockOSThread()
	env := serving.RestoreSlack(os.Environ())
	if wd, err := os.Getwd(); err == nil {
		env = append(slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PWD=") }), "PWD="+wd)
	}
	err = syscall.Exec(path, cmd, env)
	return fail(exitNotRunnable, "%s: %v", cmd[0], err)
}
