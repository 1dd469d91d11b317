//go:build linux

package overlay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"
)

func TestNamedDraftsAreIsolated(t *testing.T) {
	root, main, f := cmSetup(t, map[string]string{"a": "a\n"})
	other, err := main.Workspace().Draft("agent-2")
	if err != nil {
		t.Fatal(err)
	}
	must(t, afero.WriteFile(f, "a", []byte("main\n"), 0o644))
	must(t, afero.WriteFile(other.Fs(SourceACP), "a", []byte("other\n"), 0o644))
	for d, want := range map[*Draft]string{main: "main\n", other: "other\n"} {
		if b, _ := afero.ReadFile(d.Fs(SourceCLI), "a"); string(b) != want {
			t.Fatalf("draft %s reads %q, want %q", d.Name(), b, want)
		}
	}
	if _, err := other.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"a": "other\n"})
	// main's copy-up was of "a\n": the disk moved on, so it conflicts.
	if got := cmStatus(t, main); got != "C a" {
		t.Fatalf("main after other's commit: %q", got)
	}
	names, err := main.Workspace().Drafts()
	if err != nil || strings.Join(names, ",") != "agent-2,main" {
		t.Fatalf("drafts %v %v", names, err)
	}
	if _, err := main.Workspace().Draft("../x"); err == nil {
		t.Fatal("a draft name with a path in it was accepted")
	}
}

func TestChangeFeed(t *testing.T) {
	_, d, f := cmSetup(t, map[string]string{"a": "a\n"})
	w := d.Workspace()
	sub := w.Subscribe()
	defer sub.Close()
	stalled := w.Subscribe() // never read: must not block anyone
	defer stalled.Close()
	must(t, afero.WriteFile(f, "new", []byte("n"), 0o644))
	must(t, f.Rename("a", "b"))
	must(t, w.Buffers().Open("other", 1, []byte("typing")))
	if _, err := d.Commit(CommitOptions{Source: SourceCLI}); err != nil {
		t.Fatal(err)
	}
	want := []string{"create new cli", "write new cli", "rename a>b cli", "buffer other editor", "commit a cli", "commit b cli", "commit new cli"}
	var got []string
	timeout := time.After(5 * time.Second)
	for len(got) < len(want) {
		select {
		case c := <-sub.C:
			s := string(c.Kind) + " " + c.Path + " " + string(c.Source)
			if c.From != "" {
				s = string(c.Kind) + " " + c.From + ">" + c.Path + " " + string(c.Source)
			}
			got = append(got, s)
		case <-timeout:
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("feed:\n%v\nwant\n%v", got, want)
	}
	// A subscriber that never reads loses events, is told so, and stalls
	// nobody.
	for i := 0; i < feedQueue+10; i++ {
		must(t, f.Chmod("new", 0o600))
	}
	for range len(stalled.C) {
		<-stalled.C
	}
	must(t, f.Chmod("new", 0o644))
	if c := <-stalled.C; !c.Overflow {
		t.Fatalf("after overflow: %+v, want Overflow", c)
	}
}

// TestCommitPacesFollowers: a commit of more paths than a subscriber's
// queue holds hands them to a followed subscriber (a mount) in parts it
// keeps up with, instead of overflowing its queue, which makes a mount
// drop every entry the kernel holds.
func TestCommitPacesFollowers(t *testing.T) {
	_, d, f := cmSetup(t, map[string]string{"d/": ""})
	n := feedQueue + feedQueue/2
	for i := range n {
		must(t, afero.WriteFile(f, fmt.Sprintf("d/f%05d", i), []byte("new\n"), 0o644))
	}
	sub := d.Workspace().SubscribeFollowed()
	defer sub.Close()
	done := make(chan error, 1)
	go func() {
		_, err := d.Commit(CommitOptions{Source: SourceCLI})
		done <- err
	}()
	// A subscriber slower than the commit's publish, as a mount is: it
	// lets the first change wait while the rest would arrive.
	commits, overflow := 0, false
	var err error
	for finished := false; !finished || len(sub.C) > 0; {
		select {
		case c := <-sub.C:
			if commits == 0 {
				time.Sleep(200 * time.Millisecond)
			}
			overflow = overflow || c.Overflow
			if c.Kind == ChangeCommit && strings.HasPrefix(c.Path, "d/f") {
				commits++
			}
			sub.Applied(1)
		case err = <-done:
			finished = true
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if lost := overflow || sub.TakeLost(); lost || commits != n {
		t.Fatalf("the subscriber got %d of %d files' commit changes (lost some: %v)", commits, n, lost)
	}
}

// TestCommitWatchedPacesFollowers: a commit's own writes to a watched
// disk reach a followed subscriber as disk changes without overflowing
// its queue (a mount would drop every node the kernel caches: a
// 10,000-file commit with the kernel holding 100,000 nodes spent a
// quarter of its time on that), and its temp files, which no view
// shows, not at all.
func TestCommitWatchedPacesFollowers(t *testing.T) {
	root := t.TempDir()
	must(t, os.Mkdir(filepath.Join(root, "d"), 0o755))
	// The walk waits for the subscription: its overflow, published
	// once every directory is watched, would otherwise go before it.
	after := make(chan struct{})
	w, err := Open(Options{Root: root, StateDir: t.TempDir(), Watch: true, WatchAfter: after})
	must(t, err)
	defer w.Close()
	sub := w.SubscribeFollowed()
	defer sub.Close()
	close(after)
	for watched := false; !watched; {
		select {
		case c := <-sub.C:
			watched = c.Overflow
			sub.Applied(1)
		case <-time.After(time.Minute): // a loaded machine can take seconds
			t.Fatal("the watcher did not finish its walk")
		}
	}
	d, err := w.Draft("")
	must(t, err)
	f := d.Fs(SourceCLI)
	n := feedQueue
	for i := range n {
		must(t, afero.WriteFile(f, fmt.Sprintf("d/f%05d", i), []byte("new\n"), 0o644))
	}
	for len(sub.C) > 0 {
		<-sub.C
		sub.Applied(1)
	}
	sub.TakeLost() // the writes' own changes filled the queue
	done := make(chan error, 1)
	go func() {
		_, err := d.Commit(CommitOptions{Source: SourceCLI})
		done <- err
	}()
	overflow, temps := false, 0
	quiet := time.NewTimer(time.Hour)
	for finished := false; !finished; {
		select {
		case c := <-sub.C:
			time.Sleep(20 * time.Microsecond) // slower than the watcher, as a mount is
			overflow = overflow || c.Overflow
			if _, temp := commitTempID(filepath.Base(c.Path)); temp {
				temps++
			}
			sub.Applied(1)
		case err := <-done:
			must(t, err)
			quiet.Reset(500 * time.Millisecond) // the watcher's last events
		case <-quiet.C:
			finished = true
		}
	}
	if lost := overflow || sub.TakeLost(); lost {
		t.Errorf("a commit of %d files overflowed a followed subscriber's queue", n)
	}
	if temps > 0 {
		t.Errorf("%d changes of the commit's temp files were published", temps)
	}
}

func TestWatchPublishesDiskChanges(t *testing.T) {
	root := t.TempDir()
	w, err := Open(Options{Root: root, StateDir: t.TempDir(), Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sub := w.Subscribe()
	defer sub.Close()
	must(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	// The watcher walks the workspace beside serving and watches a new
	// directory once it saw it made: a write before then has no event,
	// so the file is written again until one comes.
	write := time.NewTicker(100 * time.Millisecond)
	defer write.Stop()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-write.C:
			must(t, os.WriteFile(filepath.Join(root, "sub/x"), []byte("x"), 0o644))
		case c := <-sub.C:
			if c.Kind == ChangeDisk && c.Path == "sub/x" {
				return
			}
		case <-deadline:
			t.Fatal("no disk change event for sub/x")
		}
	}
}

func TestCorruptStateIsReported(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	w, err := Open(Options{Root: root, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := w.Draft("")
	must(t, afero.WriteFile(d.Fs(SourceCLI), "a", []byte("a"), 0o644))
	w.Close()
	db := filepath.Join(state, "drafts", "main", "draft.db")
	must(t, os.WriteFile(db, []byte("this is not a bbolt file, not at all, no"), 0o600))
	w, err = Open(Options{Root: root, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_, err = w.Draft("")
	if err == nil || !strings.Contains(err.Error(), db) || !strings.Contains(err.Error(), "draftfs check") {
		t.Fatalf("corrupt state: %v; want an error naming %s and what to do", err, db)
	}
}

func TestSecondProcessIsRefused(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	w1, err := Open(Options{Root: root, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer w1.Close()
	if _, err := w1.Draft(""); err != nil {
		t.Fatal(err)
	}
	w2, err := Open(Options{Root: root, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if _, err := w2.Draft(""); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second opener: %v, want 'in use'", err)
	}
}

func TestXattrs(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"a": "a\n"})
	if err := unix.Lsetxattr(filepath.Join(root, "a"), "user.lower", []byte("L"), 0); err != nil {
		t.Skipf("the test file system has no user xattrs: %v", err)
	}
	if v, err := f.Getxattr("a", "user.lower"); err != nil || string(v) != "L" {
		t.Fatalf("lower xattr: %q %v", v, err)
	}
	must(t, f.Setxattr("a", "user.mine", []byte("M"), 0))
	if err := f.Setxattr("a", "user.mine", []byte("X"), unix.XATTR_CREATE); !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("XATTR_CREATE over existing: %v", err)
	}
	names, err := f.Listxattr("a")
	if err != nil || strings.Join(names, ",") != "user.lower,user.mine" {
		t.Fatalf("list %v %v", names, err)
	}
	if _, err := unix.Lgetxattr(filepath.Join(root, "a"), "user.mine", make([]byte, 8)); err == nil {
		t.Fatal("setxattr reached the disk before commit")
	}
	must(t, f.Removexattr("a", "user.lower"))
	if _, err := f.Getxattr("a", "user.lower"); !errors.Is(err, unix.ENODATA) {
		t.Fatalf("removed xattr: %v", err)
	}
	if err := f.Setxattr("a", "trusted.x", nil, 0); !errors.Is(err, syscall.ENOTSUP) {
		t.Fatalf("non-user namespace: %v", err)
	}
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if n, err := unix.Lgetxattr(filepath.Join(root, "a"), "user.mine", buf); err != nil || string(buf[:n]) != "M" {
		t.Fatalf("committed xattr: %q %v", buf[:n], err)
	}
}

// TestBufferInNewDirectory: a file the editor has open in a directory
// that does not exist on disk yet shows, and so does the directory.
func TestBufferInNewDirectory(t *testing.T) {
	_, d, f := cmSetup(t, map[string]string{"a": "a\n"})
	must(t, d.Workspace().Buffers().Open("new/sub/f.go", 1, []byte("package sub\n")))
	fi, err := f.Lstat("new")
	if err != nil || !fi.IsDir() {
		t.Fatalf("new: %v %v", fi, err)
	}
	names := func(dir string) string {
		ents, err := f.ReadDir(dir)
		if err != nil {
			t.Fatalf("readdir %s: %v", dir, err)
		}
		var out []string
		for _, e := range ents {
			out = append(out, e.Name()+map[bool]string{true: "/"}[e.IsDir()])
		}
		return strings.Join(out, ",")
	}
	if got := names(""); got != "a,new/" {
		t.Fatalf("root: %s", got)
	}
	if got := names("new/sub"); got != "f.go" {
		t.Fatalf("new/sub: %s", got)
	}
	if b, err := afero.ReadFile(f, "new/sub/f.go"); err != nil || string(b) != "package sub\n" {
		t.Fatalf("read %q %v", b, err)
	}
	must(t, afero.WriteFile(f, "new/sub/g.go", []byte("package sub\n"), 0o644))
	if got := names("new/sub"); got != "f.go,g.go" {
		t.Fatalf("new/sub after a draft write: %s", got)
	}
	must(t, d.Workspace().Buffers().Close("new/sub/f.go"))
	if got := names("new/sub"); got != "g.go" {
		t.Fatalf("new/sub after the buffer closed: %s", got)
	}
}

func TestRootMetadata(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"a": "a\n"})
	must(t, f.Chmod("/", 0o700))
	now := time.Now().Add(-time.Hour).Truncate(time.Second)
	must(t, f.Chtimes("", now, now))
	fi, err := f.Stat("/")
	if err != nil || fi.Mode().Perm() != 0o700 || !fi.ModTime().Equal(now) {
		t.Fatalf("root: %v %v", fi, err)
	}
	if b, err := afero.ReadFile(f, "a"); err != nil || string(b) != "a\n" {
		t.Fatalf("root's content after its chmod: %q %v", b, err)
	}
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(root); fi.Mode().Perm() != 0o700 {
		t.Fatalf("committed root mode %v", fi.Mode())
	}
}

// TestDiscardedCopyIsNotReadBack: a handle still open on a discarded
// draft copy must not make new opens of the path read that copy.
func TestDiscardedCopyIsNotReadBack(t *testing.T) {
	_, d, f := cmSetup(t, map[string]string{"a": "disk\n"})
	h, err := f.OpenFile("a", os.O_RDWR, 0)
	must(t, err)
	defer h.Close()
	_, err = h.WriteAt([]byte("draf"), 0)
	must(t, err)
	if _, err := d.Discard(nil, SourceCLI); err != nil {
		t.Fatal(err)
	}
	if b, err := afero.ReadFile(f, "a"); err != nil || string(b) != "disk\n" {
		t.Fatalf("after discard: %q %v", b, err)
	}
}
