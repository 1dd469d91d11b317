//go:build linux

package overlay

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"
)

// dataIno is the inode number of the data file that holds key's content
// in the draft.
func dataIno(t *testing.T, d *Draft, key string) uint64 {
	t.Helper()
	d.mu.RLock()
	e := d.entries[key]
	d.mu.RUnlock()
	if e == nil {
		t.Fatalf("%s is not in the draft", key)
	}
	ino := d.copyAt(e.Ino)
	if ino == 0 {
		t.Fatalf("%s has no data file", key)
	}
	return ino
}

// draftHas checks that the view reads each file of want as given.
func draftHas(t *testing.T, f afero.Fs, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if b, err := afero.ReadFile(f, k); err != nil || string(b) != v {
			t.Errorf("%s in the draft: %q %v, want %q", k, b, err, v)
		}
	}
}

// diskStat is lstat(2) of key on disk.
func diskStat(t *testing.T, root, key string) *syscall.Stat_t {
	t.Helper()
	fi, err := os.Lstat(filepath.Join(root, key))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t)
}

// A commit of files the draft lets go of puts the draft's own data files
// in place, one name each, with the view's mode; nothing is copied for
// undo, which takes them back and puts the disk back as it was.
func TestCommitLinksDraftFiles(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"old": "old\n"})
	must(t, afero.WriteFile(f, "old", []byte("changed\n"), 0o644))
	must(t, f.MkdirAll("n", 0o755))
	must(t, afero.WriteFile(f, "n/new", []byte("new\n"), 0o640))
	then := time.Date(2020, 1, 2, 3, 4, 5, 6, time.UTC)
	must(t, f.Chtimes("n/new", then, then))
	want := map[string]uint64{"old": dataIno(t, d, "old"), "n/new": dataIno(t, d, "n/new")}
	res, err := d.Commit(CommitOptions{})
	must(t, err)
	for k, ino := range want {
		st := diskStat(t, root, k)
		if st.Ino != ino || st.Nlink != 1 {
			t.Errorf("%s on disk: inode %d, %d links; want the draft's data file %d, one link", k, st.Ino, st.Nlink, ino)
		}
	}
	if m := diskStat(t, root, "n/new").Mode & 0o777; m != 0o640 {
		t.Errorf("n/new committed with mode %o, want 640", m)
	}
	if fi, err := os.Stat(filepath.Join(root, "n/new")); err != nil {
		t.Error(err)
	} else if !fi.ModTime().Equal(then) {
		t.Errorf("n/new committed with mtime %v, want the view's %v", fi.ModTime(), then)
	}
	if kept, _ := os.ReadDir(filepath.Join(d.undoDir(res.ID), "data")); len(kept) != 0 {
		t.Errorf("the commit kept %d files for undo, want none", len(kept))
	}
	cmEqualTree(t, root, map[string]string{"old": "changed\n", "n/": "", "n/new": "new\n"})
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"old": "old\n"})
	draftHas(t, f, map[string]string{"old": "changed\n", "n/new": "new\n"})
	// And again: the files came back as the draft's data files.
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"old": "changed\n", "n/": "", "n/new": "new\n"})
}

// A file the draft keeps after the commit (open for writing, or another
// name of it left in the draft) is copied, never shared with the disk:
// writing to it then leaves the committed file alone.
func TestCommitCopiesWhatTheDraftKeeps(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{})
	must(t, afero.WriteFile(f, "w", []byte("w1\n"), 0o644))
	must(t, afero.WriteFile(f, "l", []byte("l1\n"), 0o644))
	must(t, f.Link("l", "l2"))
	h, err := f.OpenFile("w", os.O_WRONLY, 0)
	must(t, err)
	defer h.Close()
	wIno := dataIno(t, d, "w")
	if _, err := d.Commit(CommitOptions{Keys: []string{"w", "l"}}); err != nil {
		t.Fatal(err)
	}
	if st := diskStat(t, root, "w"); st.Ino == wIno {
		t.Error("w, open for writing, was linked into place")
	}
	_, err = h.WriteAt([]byte("w2\n"), 0)
	must(t, err)
	must(t, afero.WriteFile(f, "l2", []byte("l2\n"), 0o644))
	cmEqualTree(t, root, map[string]string{"w": "w1\n", "l": "l1\n"})
}

// A data file with another name (left by a crash, say) is copied, not
// linked: the other name must not share what the commit writes.
func TestCommitCopiesDataFileWithTwoNames(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{})
	must(t, afero.WriteFile(f, "a", []byte("a\n"), 0o644))
	d.mu.RLock()
	name := d.inodes[d.entries["a"].Ino].dataName(d.entries["a"].Ino)
	d.mu.RUnlock()
	other := filepath.Join(t.TempDir(), "other")
	must(t, os.Link(d.dataPath(name), other))
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"a": "a\n"})
	must(t, os.WriteFile(filepath.Join(root, "a"), []byte("user\n"), 0o644))
	if b, _ := os.ReadFile(other); string(b) != "a\n" {
		t.Errorf("the data file's other name reads %q after the user wrote the committed file", b)
	}
	if _, err := d.Undo(SourceCLI); !errors.Is(err, ErrDiskChanged) {
		t.Errorf("undo over the user's write: %v, want ErrDiskChanged", err)
	}
}

// With the state on another file system no link can be made: the commit
// copies, and undo works as before.
func TestCommitLinkAcrossFileSystems(t *testing.T) {
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("no /dev/shm")
	}
	root := t.TempDir()
	state, err := os.MkdirTemp("/dev/shm", "draftfs-state")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(state) })
	if diskStat(t, root, ".").Dev == diskStat(t, state, ".").Dev {
		t.Skip("the temp directory is on /dev/shm's file system")
	}
	cmWrite(t, root, map[string]string{"old": "old\n"})
	w, err := Open(Options{Root: root, StateDir: state})
	must(t, err)
	defer w.Close()
	d, err := w.Draft("")
	must(t, err)
	f := d.Fs(SourceCLI)
	must(t, afero.WriteFile(f, "a", []byte("a\n"), 0o644))
	must(t, afero.WriteFile(f, "old", []byte("changed\n"), 0o644))
	res, err := d.Commit(CommitOptions{})
	must(t, err)
	rec, err := d.st.commit(res.ID)
	must(t, err)
	for _, op := range rec.Ops {
		if op.Link {
			t.Errorf("%s: the op says it linked across file systems", op.Path)
		}
	}
	cmEqualTree(t, root, map[string]string{"a": "a\n", "old": "changed\n"})
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"old": "old\n"})
	draftHas(t, f, map[string]string{"a": "a\n", "old": "changed\n"})
}

// Undo of a committed file the user has since given another name on
// disk copies it back into the draft: the draft never shares a file
// with the workspace, so a write through the draft leaves the user's
// name alone.
func TestUndoCopiesLinkedFileWithOtherNames(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{})
	must(t, afero.WriteFile(f, "a", []byte("a\n"), 0o644))
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	must(t, os.Link(filepath.Join(root, "a"), filepath.Join(root, "users")))
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"users": "a\n"})
	must(t, afero.WriteFile(f, "a", []byte("agent\n"), 0o644))
	cmEqualTree(t, root, map[string]string{"users": "a\n"})
}

// A commit killed after the draft let go of the files it linked, before
// it was stamped done, is finished at the next open, and its undo needs
// no read-back.
func TestCommitKilledAfterRelease(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	cmWrite(t, root, map[string]string{"old": "old\n"})
	w, err := Open(Options{Root: root, StateDir: state})
	must(t, err)
	d, _ := w.Draft("")
	f := d.Fs(SourceCLI)
	must(t, afero.WriteFile(f, "old", []byte("changed\n"), 0o644))
	must(t, afero.WriteFile(f, "new", []byte("new\n"), 0o644))
	time.Sleep(racyWindow + 20*time.Millisecond) // written well before the commit
	errCrash := errors.New("crash")
	testHookReleased = func() error { return errCrash }
	_, err = d.Commit(CommitOptions{})
	testHookReleased = nil
	if !errors.Is(err, errCrash) {
		t.Fatalf("commit: %v, want the crash", err)
	}
	w.Close()
	w, err = Open(Options{Root: root, StateDir: state})
	must(t, err)
	defer w.Close()
	d, _ = w.Draft("")
	f = d.Fs(SourceCLI)
	cmEqualTree(t, root, map[string]string{"old": "changed\n", "new": "new\n"})
	if st := cmStatus(t, d); st != "" {
		t.Errorf("draft after the commit finished: %s", st)
	}
	recs, err := d.st.commits()
	must(t, err)
	for _, op := range recs[len(recs)-1].Ops {
		if op.Stat == nil || op.Stat.Ctime == 0 || op.Hash == "" {
			t.Errorf("%s: stamp %+v, hash %q after the replay", op.Path, op.Stat, op.Hash)
		}
	}
	var read []string
	testHookDiskHash = func(key string) { read = append(read, key) }
	defer func() { testHookDiskHash = nil }()
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"old": "old\n"})
	draftHas(t, f, map[string]string{"old": "changed\n", "new": "new\n"})
	if len(read) != 0 {
		t.Errorf("undo read back %v: their stamps tell they are as committed", read)
	}
}

// An undo killed once it took the linked files back, put the user's
// files back over their paths and moved the draft's files back is
// finished at the next start without taking the user's files for the
// draft's.
func TestUndoResumedLeavesRevertedPaths(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"old": "old\n"})
	must(t, afero.WriteFile(f, "old", []byte("changed\n"), 0o644))
	res, err := d.Commit(CommitOptions{})
	must(t, err)
	rec, err := d.st.commit(res.ID)
	must(t, err)
	rec.State = stateUndoing
	must(t, d.st.write(&txn{commits: map[uint64]*commitRecord{rec.ID: rec}}))
	d.mu.Lock()
	must(t, d.takeBackLinked(rec, true))
	must(t, d.revertLocked(rec, len(rec.Ops)))
	for ino := range rec.Inode {
		kept := filepath.Join(d.undoDir(rec.ID), "data", keepName(ino))
		if _, err := os.Lstat(kept); err == nil {
			must(t, os.Rename(kept, d.dataPath(dataName(ino))))
		}
	}
	d.mu.Unlock()
	cmEqualTree(t, root, map[string]string{"old": "old\n"})
	if _, err := d.Undo(SourceCLI); err != nil { // finishes the undo
		t.Fatal(err)
	}
	cmEqualTree(t, root, map[string]string{"old": "old\n"})
	if b, err := afero.ReadFile(f, "old"); err != nil || string(b) != "changed\n" {
		t.Errorf("old in the draft after undo: %q %v", b, err)
	}
}

// A file committed into a directory with a default ACL gets the ACL, as
// a file made there does: it is copied, not linked (the draft's file
// has none).
func TestCommitCopiesUnderDefaultACL(t *testing.T) {
	root, d, f := cmSetup(t, map[string]string{"shared/old": "old\n"})
	// user::rwx, user:4242:rw-, group::r-x, mask::rwx, other::r-x
	acl := []byte{2, 0, 0, 0}
	for _, e := range [][3]uint32{{0x01, 7, 0xffffffff}, {0x02, 6, 4242}, {0x04, 5, 0xffffffff}, {0x10, 7, 0xffffffff}, {0x20, 5, 0xffffffff}} {
		acl = append(acl, byte(e[0]), byte(e[0]>>8), byte(e[1]), byte(e[1]>>8), byte(e[2]), byte(e[2]>>8), byte(e[2]>>16), byte(e[2]>>24))
	}
	if err := syscall.Setxattr(filepath.Join(root, "shared"), "system.posix_acl_default", acl, 0); err != nil {
		t.Skipf("no default ACL here: %v", err)
	}
	must(t, afero.WriteFile(f, "shared/new", []byte("new\n"), 0o644))
	must(t, afero.WriteFile(f, "other", []byte("other\n"), 0o644))
	want := dataIno(t, d, "other")
	if _, err := d.Commit(CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := syscall.Getxattr(filepath.Join(root, "shared/new"), "system.posix_acl_access", nil); err != nil {
		t.Errorf("shared/new committed without the directory's default ACL: %v", err)
	}
	if diskStat(t, root, "other").Ino != want {
		t.Error("other, in a directory without a default ACL, was not linked")
	}
	cmEqualTree(t, root, map[string]string{"shared/": "", "shared/old": "old\n", "shared/new": "new\n", "other": "other\n"})
	if _, err := d.Undo(SourceCLI); err != nil {
		t.Fatal(err)
	}
	draftHas(t, f, map[string]string{"shared/new": "new\n", "other": "other\n"})
}
