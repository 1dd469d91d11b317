package main

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The damaged-state tests start from a real draft: changes made through
// a mount, checkpointed when a first daemon stopped, then more changes
// left unreplayed in draft.wal by kill -9 of a second daemon.

// killedDraft makes such a draft and returns the fixture and the
// draft's state directory.
func killedDraft(t *testing.T) (*fixture, string) {
	t.Helper()
	f := newFixture(t)
	f.file("a.txt", "one\n")
	f.file("z/old", "old\n")
	mnt := filepath.Join(f.tmp, "view")
	write := func(key, text string) {
		t.Helper()
		p := filepath.Join(mnt, key)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d := f.serve(mnt)
	write("a.txt", "two\n")
	for i := range 20 {
		write(fmt.Sprintf("early/%02d", i), fmt.Sprintf("early %d\n", i))
	}
	d.stop() // checkpointed into draft.db
	d = f.serve(mnt)
	write("later/new.txt", "later\n")
	if err := os.Rename(filepath.Join(mnt, "later/new.txt"), filepath.Join(mnt, "later/moved.txt")); err != nil {
		t.Fatal(err)
	}
	write("b.txt", "bee\n")
	d.kill()
	f.ok("unmount", mnt)
	dir := draftDir(t, f)
	if fi, err := os.Stat(filepath.Join(dir, "draft.wal")); err != nil || fi.Size() == 0 {
		t.Fatalf("the killed daemon left no records to replay: %v %v", fi, err)
	}
	return f, dir
}

// draftDir is the main draft's state directory.
func draftDir(t *testing.T, f *fixture) string {
	m, _ := filepath.Glob(filepath.Join(f.state, "*", "drafts", "main"))
	if len(m) != 1 {
		t.Fatalf("draft state directory: %v", m)
	}
	return m[0]
}

// stateSum describes every file below dir, contents included, to check
// that nothing changed it.
func stateSum(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, _ := e.Info()
		line := fmt.Sprintf("%s %v %d", strings.TrimPrefix(p, dir), fi.Mode(), fi.Size())
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		lines = append(lines, line)
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// refuses runs a command that must fail on the damaged state with a
// clear error naming want, without a panic and without touching the
// state.
func refuses(t *testing.T, f *fixture, dir, want string, args ...string) {
	t.Helper()
	before := stateSum(t, dir)
	r := f.run(args...)
	if r.code != 1 || !strings.Contains(r.err, want) || !strings.Contains(r.err, "draftfs check") || strings.Contains(r.err, "panic") {
		t.Fatalf("draftfs %s on damaged state: %s; want exit 1 naming %q and draftfs check", strings.Join(args, " "), r, want)
	}
	if after := stateSum(t, dir); after != before {
		t.Fatalf("draftfs %s changed the damaged state:\nbefore\n%s\nafter\n%s", strings.Join(args, " "), before, after)
	}
}

func TestReadOnlyCommandsWriteNoState(t *testing.T) {
	f, dir := killedDraft(t)
	before := stateSum(t, dir)
	if r := f.ok("status"); !strings.Contains(r.out, "A later/moved.txt") || !strings.Contains(r.out, "A early/00") {
		t.Fatalf("status of the killed draft: %s", r)
	}
	f.ok("diff")
	f.ok("log")
	if after := stateSum(t, dir); after != before {
		t.Fatalf("status, diff and log changed the state:\nbefore\n%s\nafter\n%s", before, after)
	}
	if r := f.ok("check"); !strings.Contains(r.out, "ok") {
		t.Fatalf("check of a sound draft: %s", r)
	}
	if after := stateSum(t, dir); after != before {
		t.Fatal("check changed the state")
	}
}

func TestDamagedStateMissingDB(t *testing.T) {
	f, dir := killedDraft(t)
	if err := os.Remove(filepath.Join(dir, "draft.db")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status"}, {"log"}, {"diff"}, {"discard", "--all"}, {"serve"}} {
		refuses(t, f, dir, "draft.db is missing", args...)
	}
	r := f.run("check")
	if r.code != 1 || !strings.Contains(r.out, "draft.db: missing") {
		t.Fatalf("check: %s", r)
	}
	r = f.ok("check", "--repair")
	if !strings.Contains(r.out, "lost+found") {
		t.Fatalf("check --repair: %s", r)
	}
	// What the log held is back; the content of files only the lost
	// database named is kept in lost+found.
	if r := f.ok("status"); !strings.Contains(r.out, "A later/moved.txt") || !strings.Contains(r.out, "A b.txt") {
		t.Fatalf("status after the repair: %s", r)
	}
	lost, _ := os.ReadDir(filepath.Join(dir, "lost+found"))
	if len(lost) < 20 {
		t.Fatalf("lost+found holds %d files, want the 20 whose records were in the lost database", len(lost))
	}
}

func TestDamagedStateWAL(t *testing.T) {
	for _, off := range []int64{0, 100} {
		t.Run(fmt.Sprint("offset ", off), func(t *testing.T) {
			f, dir := killedDraft(t)
			wal := filepath.Join(dir, "draft.wal")
			fd, err := os.OpenFile(wal, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			fd.WriteAt([]byte("garbled!"), off)
			fd.Close()
			for _, args := range [][]string{{"status"}, {"log"}, {"discard", "--all"}, {"serve"}} {
				refuses(t, f, dir, "draft.wal is damaged at offset 0", args...)
			}
			r := f.run("check", "--json")
			if r.code != 1 || !strings.Contains(r.out, `"offset": 0`) || !strings.Contains(r.out, "damaged record") {
				t.Fatalf("check: %s", r)
			}
			r = f.ok("check", "--repair")
			if !strings.Contains(r.out, "kept draft.wal aside") {
				t.Fatalf("check --repair: %s", r)
			}
			if m, _ := filepath.Glob(wal + ".damaged-*"); len(m) != 1 {
				t.Fatalf("damaged log not kept aside: %v", m)
			}
			// The records after the damaged one are replayed.
			if r := f.ok("status"); !strings.Contains(r.out, "A b.txt") || !strings.Contains(r.out, "M a.txt") {
				t.Fatalf("status after the repair: %s", r)
			}
			f.ok("check")
		})
	}
}

func TestDamagedStateDB(t *testing.T) {
	f, dir := killedDraft(t)
	db := filepath.Join(dir, "draft.db")
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(1))
	for i := 2 * 4096; i < len(b); i++ {
		b[i] = byte(r.Intn(256))
	}
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status"}, {"log"}, {"diff"}, {"serve"}} {
		refuses(t, f, dir, "draft.db", args...)
	}
	if r := f.run("check"); r.code != 1 || !strings.Contains(r.out, "draft.db") || strings.Contains(r.err, "panic") {
		t.Fatalf("check: %s", r)
	}
	f.ok("check", "--repair")
	if m, _ := filepath.Glob(db + ".damaged-*"); len(m) != 1 {
		t.Fatalf("damaged database not kept aside: %v", m)
	}
	if r := f.ok("status"); !strings.Contains(r.out, "A b.txt") {
		t.Fatalf("status after the repair: %s", r)
	}
}
