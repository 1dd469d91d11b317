//go:build linux

package overlay

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// TestSparesEarlierLayout: a state directory as earlier versions left
// it (format 2, every data file named by its inode number, spares in
// spare/) opens and works: its files read, a removed one's data file
// becomes a spare, which a new file takes; its format is now one
// earlier versions refuse.
func TestSparesEarlierLayout(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	open := func() (*Workspace, *Draft, *Fs) {
		ws, err := Open(Options{Root: root, StateDir: state})
		must(t, err)
		d, err := ws.Draft("")
		must(t, err)
		return ws, d, d.Fs(SourceMCP)
	}
	ws, d, v := open()
	must(t, afero.WriteFile(v, "a", []byte("content of a"), 0o644))
	must(t, afero.WriteFile(v, "b", []byte("content of b"), 0o644))
	d.mu.Lock()
	for ino, n := range d.inodes {
		if n.File != 0 {
			must(t, os.Rename(d.dataPath(n.dataName(ino)), d.dataPath(dataName(ino))))
			c := *n
			c.File = 0
			must(t, d.st.write(&txn{inodes: map[uint64]*inode{ino: &c}}))
		}
	}
	d.mu.Unlock()
	must(t, ws.Close())
	db, err := bolt.Open(d.st.path, 0o600, nil)
	must(t, err)
	must(t, db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyFormat, []byte("2")) }))
	must(t, db.Close())
	spare := filepath.Join(d.dir, "spare")
	must(t, os.MkdirAll(spare, 0o700))
	must(t, os.WriteFile(filepath.Join(spare, "1"), nil, 0o600))

	ws, d, v = open()
	defer func() { ws.Close() }()
	wantRead(t, v, "a", "content of a")
	wantRead(t, v, "b", "content of b")
	if _, err := os.Lstat(spare); !os.IsNotExist(err) {
		t.Errorf("the earlier spare directory stayed: %v", err)
	}
	must(t, d.st.db.View(func(tx *bolt.Tx) error {
		if f := tx.Bucket(bucketMeta).Get(keyFormat); string(f) != string(formatVersion) {
			t.Errorf("format %q after opening format 2, want %q (earlier versions refuse it)", f, formatVersion)
		}
		return nil
	}))
	var was, now unix.Stat_t
	must(t, unix.Lstat(DataFile(v, "a"), &was))
	must(t, v.Remove("a"))
	must(t, afero.WriteFile(v, "c", []byte("content of c"), 0o644))
	if must(t, unix.Lstat(DataFile(v, "c"), &now)); now.Ino != was.Ino {
		t.Errorf("c's data file is not a's, emptied")
	}
	if ents, _ := os.ReadDir(filepath.Join(d.dir, "data")); len(ents) != 2 {
		t.Errorf("data files %v, want b's and c's (a's, emptied)", ents)
	}
	must(t, ws.Close())
	ws, _, v = open()
	wantRead(t, v, "b", "content of b")
	wantRead(t, v, "c", "content of c")
}

func wantRead(t *testing.T, v *Fs, key, want string) {
	t.Helper()
	b, err := afero.ReadFile(v, key)
	if err != nil || string(b) != want {
		t.Errorf("%s reads %q, %v; want %q", key, b, err, want)
	}
}

// TestSparesRetireNoReplace: a file named by its inode number becomes a
// spare under a number no file has, also before the numbers in use are
// known (a recovery at open runs before collectGarbage sees them).
func TestSparesRetireNoReplace(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpares(dir)
	must(t, err)
	data, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(data)
	must(t, os.WriteFile(filepath.Join(dir, fileName(1)), []byte("a file's content"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, dataName(7)), []byte("gone"), 0o600))
	s.retire(data, dataName(7))
	if b, err := os.ReadFile(filepath.Join(dir, fileName(1))); err != nil || string(b) != "a file's content" {
		t.Fatalf("%s reads %q, %v after a retire", fileName(1), b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, fileName(2))); err != nil || string(b) != "gone" {
		t.Fatalf("the retired file is not %s, as it was (small): %q, %v", fileName(2), b, err)
	}
	if f, spare, _ := s.take(); !spare || f != 2 {
		t.Errorf("take gave %d (spare %v), want the spare 2", f, spare)
	}
}

// TestSparesKeepWithinBudget: a small spare keeps its content until it
// is taken, as long as the spares keep at most keptSpareBytes so; then,
// and for a large one, it is emptied when it becomes a spare.
func TestSparesKeepWithinBudget(t *testing.T) {
	dir := t.TempDir()
	data, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(data)
	s := &spares{next: 1}
	retire := func(size int) string {
		t.Helper()
		s.mu.Lock()
		name := fileName(s.next) // a new file's number, as take gives with no spare
		s.next++
		s.mu.Unlock()
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
		if !s.retire(data, name) {
			t.Fatal("retire refused")
		}
		return name
	}
	size := func(name string) int64 {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	if big := retire(smallSpare + 1); size(big) != 0 {
		t.Errorf("a large spare keeps %d bytes", size(big))
	}
	s.take() // the big one
	small := keptSpareBytes / 4096
	var names []string
	for range small + 10 {
		names = append(names, retire(4096))
	}
	kept := 0
	for _, n := range names {
		if size(n) > 0 {
			kept++
		}
	}
	if kept == 0 || kept > small || s.keptN > keptSpareBytes {
		t.Errorf("%d of %d small spares keep content (%d bytes), want some and at most %d (%d bytes)", kept, len(names), s.keptN, small, keptSpareBytes)
	}
	for range names {
		s.take()
	}
	if s.keptN != 0 || len(s.kept) != 0 {
		t.Errorf("with no spares left %d bytes are counted kept", s.keptN)
	}
}
