//go:build linux

package control

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sunPathMax is the room for a socket path in sockaddr_un, less the
// terminating NUL.
const sunPathMax = 107

// SocketPath returns where the control socket of the workspace whose
// state lives in stateDir is: stateDir/control.sock, or, when that is
// too long for a Unix socket address (108 bytes), a short name made of
// a hash of stateDir under $XDG_RUNTIME_DIR/draftfs or /tmp/draftfs-UID.
func SocketPath(stateDir string) string { return socketPath(stateDir, "control") }

// AgentSocketPath returns where the agent socket of the workspace whose
// state lives in stateDir is (as SocketPath, named agent): the one
// socket of the daemon that draftfs run and acp let their commands
// reach, at the control socket's path (see Server.ServeAgents).
func AgentSocketPath(stateDir string) string { return socketPath(stateDir, "agent") }

func socketPath(stateDir, name string) string {
	p := filepath.Join(stateDir, name+".sock")
	if len(p) <= sunPathMax {
		return p
	}
	sum := sha256.Sum256([]byte(stateDir))
	suffix := ".sock"
	if name != "control" {
		suffix = "." + name + ".sock"
	}
	return filepath.Join(shortDir(), hex.EncodeToString(sum[:8])+suffix)
}

// SocketDir is the directory of the sockets whose paths are too long to
// lie in their state directory.
func SocketDir() string { return shortDir() }

func shortDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "draftfs")
	}
	return filepath.Join(os.TempDir(), "draftfs-"+strconv.Itoa(os.Getuid()))
}

// privateDir creates dir with mode 0700, or checks that an existing one
// is a directory (not a symlink) owned by this user that nobody else can
// enter: a shared /tmp must not let another user plant or watch sockets.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create socket directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("socket directory %s is not a directory: remove it", dir)
	case ok && int(st.Uid) != os.Getuid():
		return fmt.Errorf("socket directory %s belongs to uid %d, not to you: remove it", dir, st.Uid)
	case fi.Mode().Perm() != 0o700:
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("socket directory %s: make it private: %w", dir, err)
		}
	}
	return nil
}

// ErrRunning: a daemon already answers on the socket.
var ErrRunning = errors.New("a draftfs daemon is already running for this workspace")

// Listen creates the control socket at path, mode 0600 in a 0700
// directory. A socket file left by a daemon that died (nothing accepts
// on it) is replaced; one a live daemon answers on is not: ErrRunning,
// with the pid of the daemon in the message when the kernel tells it.
func Listen(path string) (*net.UnixListener, error) {
	if err := privateDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	// Until the chmod below the socket has the umask's mode; the 0700
	// directory keeps others out meanwhile. (Changing the umask instead
	// would race with files other goroutines create.)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	l.SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return l, nil
}

// removeStale removes a socket file at path that no process accepts on.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("socket %s: %w", path, err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket: move it away", path)
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		pid := 0
		if cred, err := peerCred(c.(*net.UnixConn)); err == nil {
			pid = int(cred.Pid)
		}
		c.Close()
		if pid > 0 {
			return fmt.Errorf("%w (pid %d, socket %s)", ErrRunning, pid, path)
		}
		return fmt.Errorf("%w (socket %s)", ErrRunning, path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	return nil
}

// peerCred returns the credentials of the process at the other end.
func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var serr error
	err = raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err != nil {
		return nil, err
	}
	return cred, serr
}

// ErrNoDaemon: nothing listens on the control socket.
var ErrNoDaemon = errors.New("no draftfs daemon is running for this workspace")

// dialSocket connects to the control socket at path. When no daemon
// listens there (no socket file, or a stale one) the error wraps
// ErrNoDaemon. Before the caller sends anything (editor text, review
// commands), it checks that nobody else can have put the socket there
// or listen on it: the directory must be this user's and writable by no
// one else, the socket this user's, and the process that accepted the
// connection must run as this user (SO_PEERCRED). Otherwise the error
// wraps ErrForeignSocket.
func dialSocket(path string) (*net.UnixConn, error) {
	if err := checkSocketPath(path); err != nil {
		return nil, err
	}
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w (no one listens on %s)", ErrNoDaemon, path)
		}
		return nil, fmt.Errorf("connect to %s: %w", path, err)
	}
	cred, err := peerCred(c)
	if err == nil && int(cred.Uid) != os.Geteuid() {
		err = fmt.Errorf("%w: the process listening on %s (pid %d) runs as uid %d, not as you (uid %d); nothing was sent to it: stop it, remove the socket and start draftfs again",
			ErrForeignSocket, path, cred.Pid, cred.Uid, os.Geteuid())
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// ErrForeignSocket: the control socket, its directory or the process
// listening on it is not the user's own.
var ErrForeignSocket = errors.New("the control socket is not yours")

// checkSocketPath refuses a socket in a directory that is not this
// user's or that others can write to (they could replace the socket),
// and a socket that is not this user's.
func checkSocketPath(path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w (no socket directory %s)", ErrNoDaemon, dir)
	}
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	me := os.Geteuid()
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%w: socket directory %s is not a directory (%v): remove it and start draftfs again", ErrForeignSocket, dir, fi.Mode().Type())
	case st != nil && int(st.Uid) != me:
		return fmt.Errorf("%w: socket directory %s belongs to uid %d, not to you (uid %d), so another user may listen there; nothing was sent: remove it and start draftfs again", ErrForeignSocket, dir, st.Uid, me)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%w: socket directory %s can be written by other users (mode %04o), so the socket may not be the daemon's; nothing was sent: chmod 700 %s and start draftfs again", ErrForeignSocket, dir, fi.Mode().Perm(), dir)
	}
	fi, err = os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w (no one listens on %s)", ErrNoDaemon, path)
	}
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != me {
		return fmt.Errorf("%w: socket %s belongs to uid %d, not to you (uid %d); nothing was sent: remove it and start draftfs again", ErrForeignSocket, path, st.Uid, me)
	}
	return nil
}

// Connect returns a Client served by s in this process, over a socket
// pair: what a command uses when no daemon runs. (net.Pipe is several
// times slower for large messages: it hands data over synchronously.)
func (s *Server) Connect() (*Client, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket pair: %w", err)
	}
	var conns [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "control")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			if i == 1 {
				conns[0].Close()
			} else {
				unix.Close(fds[1])
			}
			return nil, fmt.Errorf("socket pair: %w", err)
		}
		conns[i] = c
	}
	s.ServeConn(conns[0])
	return NewClient(conns[1]), nil
}
