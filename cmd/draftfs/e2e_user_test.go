package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The end-to-end tests of the main paths run as root and as an ordinary
// user, testUser, which the tests create. On these machines /dev/fuse
// is closed to other users (a stock Debian has it 0666): while a test
// runs as testUser it is opened, and restored after the last such test
// of any process (see openFUSE).

// testUser is the ordinary user the tests run draftfs as.
const testUser = "draftfs-test"

// whoever runs body once as root (with a fresh fixture) and once as
// testUser, as subtests "root" and "user".
func whoever(t *testing.T, body func(t *testing.T, f *fixture)) {
	t.Run("root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("not root")
		}
		body(t, newFixture(t))
	})
	t.Run("user", func(t *testing.T) { body(t, userFixture(t)) })
}

// userFixture is a fixture owned and used by testUser. As another user
// than root it runs as that user itself.
func userFixture(t *testing.T) *fixture {
	t.Helper()
	if os.Geteuid() != 0 {
		return newFixture(t) // an ordinary user already
	}
	cred := testUserCred(t)
	openFUSE(t)
	f := newFixture(t)
	f.cred = cred
	if err := os.Chmod(f.tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	f.own(f.ws)
	return f
}

// testUserCred returns testUser's credentials, creating the user when
// missing (several test processes may try at once).
func testUserCred(t *testing.T) *syscall.Credential {
	t.Helper()
	var lastErr error
	for try := 0; try < 20; try++ {
		if u, err := user.Lookup(testUser); err == nil {
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		}
		out, err := exec.Command("useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", testUser).CombinedOutput()
		if err != nil {
			// 9: made meanwhile by another process; 10: /etc/passwd
			// locked by one. Look again.
			lastErr = fmt.Errorf("useradd %s: %v: %s", testUser, err, out)
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Skipf("cannot create the test user: %v", lastErr)
	return nil
}

// fuseHolders records, under an flock of its own, the original mode of
// /dev/fuse and one line per test (the pid of its process) that needs
// it open to ordinary users.
const (
	fuseLock    = "/run/draftfs-test-fuse.lock"
	fuseHolders = "/run/draftfs-test-fuse.holders"
)

// openFUSE makes /dev/fuse usable by every user (0666) until the test
// ends; the last test that needs it, in any process, puts its mode back.
// Lines of processes that died are dropped, so a crashed test leaves it
// open only until the next one ends.
func openFUSE(t *testing.T) {
	t.Helper()
	me := strconv.Itoa(os.Getpid())
	stock := false
	// The mode is read under the lock: read before it, it could be a
	// holder's 0666 that the holder puts back before this test runs.
	withFUSELock(t, func(mode os.FileMode, holders []string) (os.FileMode, []string) {
		if len(holders) == 0 {
			fi, err := os.Stat("/dev/fuse")
			if err != nil {
				t.Skipf("no /dev/fuse: %v", err)
			}
			if fi.Mode().Perm()&0o006 == 0o006 {
				stock = true // open already, as on a stock Debian
				return mode, holders
			}
			mode = fi.Mode().Perm()
			if err := os.Chmod("/dev/fuse", 0o666); err != nil {
				t.Skipf("cannot open /dev/fuse to other users: %v", err)
			}
		}
		return mode, append(holders, me)
	})
	if stock {
		return
	}
	t.Cleanup(func() {
		withFUSELock(t, func(mode os.FileMode, holders []string) (os.FileMode, []string) {
			if i := indexOf(holders, me); i >= 0 {
				holders = append(holders[:i], holders[i+1:]...)
			}
			if len(holders) == 0 {
				if err := os.Chmod("/dev/fuse", mode); err != nil {
					t.Errorf("restore /dev/fuse to %04o: %v", mode, err)
				}
			}
			return mode, holders
		})
	})
}

// withFUSELock calls fn with the recorded mode and the holders that are
// still alive, under the lock, and records what it returns (removing
// the record when no holder is left).
func withFUSELock(t *testing.T, fn func(os.FileMode, []string) (os.FileMode, []string)) {
	t.Helper()
	lf, err := os.OpenFile(fuseLock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Skipf("cannot record who opened /dev/fuse: %v", err)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer unix.Flock(int(lf.Fd()), unix.LOCK_UN)
	var mode os.FileMode
	var holders []string
	if data, err := os.ReadFile(fuseHolders); err == nil {
		lines := strings.Fields(string(data))
		if len(lines) > 0 {
			m, _ := strconv.ParseUint(lines[0], 8, 32)
			mode = os.FileMode(m)
			for _, pid := range lines[1:] {
				if n, err := strconv.Atoi(pid); err == nil && unix.Kill(n, 0) != unix.ESRCH {
					holders = append(holders, pid)
				}
			}
		}
	}
	if len(holders) == 0 && mode != 0 {
		// Every holder died without restoring: do it now.
		os.Chmod("/dev/fuse", mode)
	}
	mode, holders = fn(mode, holders)
	if len(holders) == 0 {
		os.Remove(fuseHolders)
		return
	}
	data := fmt.Sprintf("%04o\n%s\n", mode, strings.Join(holders, "\n"))
	if err := os.WriteFile(fuseHolders+".tmp", []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(fuseHolders+".tmp", fuseHolders); err != nil {
		t.Fatal(err)
	}
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// TestUserMountClosedFUSE: where /dev/fuse is closed to the user, mount
// and run say so and how to fix it. (/dev/fuse is replaced by a file
// only root may open, in a namespace of the command's own, since other
// tests need the real one open meanwhile.)
func TestUserMountClosedFUSE(t *testing.T) {
	needBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the test user a closed /dev/fuse")
	}
	f := userFixture(t)
	closed := filepath.Join(f.tmp, "fuse") // the user reaches it, may not open it
	if err := os.WriteFile(closed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"mount", filepath.Join(f.tmp, "view")}, {"run", "true"}} {
		c := f.as(exec.Command("bwrap", append([]string{"--unshare-user", "--dev-bind", "/", "/", "--bind", closed, "/dev/fuse", "--", bin, "--workspace", f.ws, "--state", f.state}, args...)...))
		r := f.finish(c, "")
		if r.code != 1 || !strings.Contains(r.err, "/dev/fuse") || !strings.Contains(r.err, "chmod 0666 /dev/fuse") {
			t.Errorf("draftfs %v with /dev/fuse closed: %s", args, r)
		}
	}
}

// TestUserMountWhileRootChanges: an ordinary user's mount comes up while
// the workspace root keeps changing on disk. The kernel starts a FUSE
// root with no permissions and drops a GETATTR answer that an
// invalidation of the same inode overtook; invalidating the root before
// the mount had answered refused its first access (go-fuse's poll check
// in WaitMount) with EACCES: "mount DIR: permission denied". --debug
// slows every request, which widens that window.
func TestUserMountWhileRootChanges(t *testing.T) {
	needFUSE(t)
	f := userFixture(t)
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Add(1)
	go func() {
		defer churn.Done()
		p := filepath.Join(f.ws, "churn")
		for {
			select {
			case <-stop:
				return
			default:
			}
			os.WriteFile(p, nil, 0o644)
			os.Remove(p)
		}
	}()
	defer func() {
		close(stop)
		churn.Wait()
	}()
	for i := 0; i < 20; i++ {
		mnt := filepath.Join(f.tmp, fmt.Sprintf("view%d", i))
		if err := os.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		f.own(mnt)
		f.serve(mnt, "--debug").stop()
	}
}
