//go:build linux

package fusefs

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
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
