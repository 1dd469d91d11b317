//go:build linux

package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// TestSetattrRepliesAreCached: the attributes a SETATTR returns are
// kept like a GETATTR's, so a stat right after tar's utimes, chown and
// chmod of a file it made asks the server nothing.
func TestSetattrRepliesAreCached(t *testing.T) {
	var log requestLog
	m := testMount(t, mountOptions{logf: log.logf})
	p := filepath.Join(m.mnt, "f.txt")
	if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(1_700_000_000, 0)
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(p, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	getattr := regexp.MustCompile(`: GETATTR n\d+`)
	log.count(getattr)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 || !fi.ModTime().Equal(mtime) {
		t.Errorf("stat after chmod: %v %v, want 0644 and %v", fi.Mode(), fi.ModTime(), mtime)
	}
	if n := log.count(getattr); n != 0 {
		t.Errorf("stat after chmod sent %d GETATTR requests, want none", n)
	}
}

// TestCreateCostsNoRelease: in the default mode a file created and
// closed costs the server no CREATE and no RELEASE (once the first
// CREATE was declined, the kernel creates files with MKNOD and opens
// them itself), and O_CREAT keeps its meaning: a file created read-only
// is still opened for writing by its creator, O_EXCL still refuses.
func TestCreateCostsNoRelease(t *testing.T) {
	if passthroughAll {
		t.Skip("DRAFTFS_TEST_PASSTHROUGH=1: passthrough mode serves CREATE")
	}
	var log requestLog
	m := testMount(t, mountOptions{logf: log.logf})
	create := func(name string) {
		t.Helper()
		p := filepath.Join(m.mnt, name)
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("x\n"); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		mustRead(t, p, "x\n")
		if _, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); !errors.Is(err, fs.ErrExist) {
			t.Errorf("O_EXCL over %s: %v, want EEXIST", p, err)
		}
	}
	create("first") // its CREATE and OPEN are declined
	settle(t, m)
	time.Sleep(100 * time.Millisecond) // a RELEASE comes after close returns
	log.count(regexp.MustCompile(`^`))
	for i := range 3 {
		create(fmt.Sprintf("f%d", i))
	}
	settle(t, m)
	time.Sleep(100 * time.Millisecond)
	counts := map[string]int{}
	op := regexp.MustCompile(`rx \d+: ([A-Z_]+) `)
	log.mu.Lock()
	for _, l := range log.lines {
		if m := op.FindStringSubmatch(l); m != nil {
			counts[m[1]]++
		}
	}
	log.mu.Unlock()
	if counts["CREATE"] != 0 || counts["RELEASE"] != 0 || counts["OPEN"] != 0 || counts["MKNOD"] != 3 {
		t.Errorf("requests for 3 files created, written and closed: %v; want 3 MKNOD and no CREATE, OPEN or RELEASE", counts)
	}
}

// requestLog counts the FUSE requests a mount logs (Options.Debug).
type requestLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *requestLog) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

// count is the number of logged lines matching re since the last call.
func (l *requestLog) count(re *regexp.Regexp) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if re.MatchString(line) {
			n++
		}
	}
	l.lines = nil
	return n
}

var readRequest = regexp.MustCompile(`: READ n\d+`)

// TestListingLeavesLookedUpEntries: a READDIRPLUS entry whose name the
// kernel looked up to the same object already goes without a node
// (dirHandle.Lookup declines it): git lists the directories whose files
// it stat'ed, and those entries cost no lookup work. An entry whose
// object changed since (replaced on disk, unwatched) is still looked
// up, so the listing gives the kernel the new object.
func TestListingLeavesLookedUpEntries(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"a": "a\n", "c": "c\n"}})
	for _, name := range []string{"a", "c"} {
		if _, err := os.Stat(filepath.Join(m.mnt, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(m.root, "c.new"), []byte("a new c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(m.root, "c.new"), filepath.Join(m.root, "c")); err != nil {
		t.Fatal(err)
	}
	disk, err := os.Stat(filepath.Join(m.root, "c"))
	if err != nil {
		t.Fatal(err)
	}

	// The listing as the server answers it, in process: a is declined.
	h := &dirHandle{n: m.srv.root}
	for {
		de, errno := h.Readdirent(context.Background())
		if errno != 0 || de == nil {
			t.Fatalf("no entry a in the listing (errno %v)", errno)
		}
		if de.Name != "a" {
			continue
		}
		var out fuse.EntryOut
		if in, errno := h.Lookup(context.Background(), "a", &out); in != nil || errno == 0 {
			t.Errorf("READDIRPLUS entry a, looked up before: node %v, errno %v; want none (declined)", in, errno)
		}
		break
	}

	// Through the kernel: the listing hands over c's new object.
	if _, err := os.ReadDir(m.mnt); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(m.mnt, "c"))
	if err != nil {
		t.Fatal(err)
	}
	if ino := fi.Sys().(*syscall.Stat_t).Ino; ino != disk.Sys().(*syscall.Stat_t).Ino || fi.Size() != disk.Size() {
		t.Errorf("c after a listing: inode %d, %d bytes; want the disk's new file's %d, %d bytes", ino, fi.Size(), disk.Sys().(*syscall.Stat_t).Ino, disk.Size())
	}
}

// TestListingReadOnce: a listing the kernel reads in several READDIRPLUS
// requests is read from the engine once, by the first: the others read
// on in it at the offsets the kernel was given, so a name the disk got
// meanwhile (unwatched, so unpublished) is not in it, and one read past
// its end lets go of it. A change published meanwhile (a file made
// through the mount) has it read again, and a listing from the start
// is read afresh.
func TestListingReadOnce(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"f0": "", "f1": "", "f2": "", "f3": ""}})
	ctx := context.Background()
	// request reads at most max entries of the root's listing from off,
	// as one READDIRPLUS with its own handle does.
	request := func(off uint64, max int) (names []string, next uint64) {
		t.Helper()
		h := &dirHandle{n: m.srv.root}
		if off > 0 {
			h.Seekdir(ctx, off)
		}
		for len(names) < max {
			de, errno := h.Readdirent(ctx)
			if errno != 0 {
				t.Fatal(errno)
			}
			if de == nil {
				break
			}
			names, next = append(names, de.Name), de.Off
		}
		return names, next
	}

	_, off := request(0, 3) // ".", "..", "f0"
	if err := os.WriteFile(filepath.Join(m.root, "f1a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := request(off, 100); !slices.Equal(got, []string{"f1", "f2", "f3"}) {
		t.Errorf("listing read on after f1a was made on disk: %q, want the first request's f1, f2, f3", got)
	}
	if got, _ := request(0, 100); !slices.Contains(got, "f1a") {
		t.Errorf("listing from the start: %q, want f1a in it", got)
	}

	_, off = request(0, 2)
	if err := os.WriteFile(filepath.Join(m.mnt, "f9"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := request(off, 100); !slices.Contains(got, "f9") {
		t.Errorf("listing read on after f9 was made through the mount: %q, want f9 in it", got)
	}

	if _, err := os.ReadDir(m.mnt); err != nil {
		t.Fatal(err)
	}
	m.srv.listings.mu.Lock()
	kept := len(m.srv.listings.kept)
	m.srv.listings.mu.Unlock()
	if kept != 0 {
		t.Errorf("%d listings kept after the kernel read the root's to its end, want none", kept)
	}
}
