package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestRecycledInodeNumber: a disk file created after another was removed
// may get its inode number (ext4 hands it out again at once); the draft's
// copy of the removed file must not show through the new one, nor take
// its writes.
func TestRecycledInodeNumber(t *testing.T) {
	f := newFixture(t)
	f.file("a.txt", "old a\n")
	mnt := filepath.Join(f.tmp, "view")
	f.serve(mnt)
	af, err := os.OpenFile(filepath.Join(mnt, "a.txt"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := af.WriteString("appended by the agent\n"); err != nil {
		t.Fatal(err)
	}
	af.Close()
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(f.ws, "a.txt"), &st); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(f.ws, "a.txt")); err != nil {
		t.Fatal(err)
	}
	// Make files until one takes a.txt's number.
	name := ""
	for i := 0; i < 50 && name == ""; i++ {
		p := filepath.Join(f.ws, fmt.Sprintf("c%d.txt", i))
		if err := os.WriteFile(p, []byte("new file c\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var cs syscall.Stat_t
		syscall.Stat(p, &cs)
		if cs.Ino == st.Ino {
			name = filepath.Base(p)
		}
	}
	if name == "" {
		t.Skip("the disk gave no new file the removed file's inode number")
	}
	c := filepath.Join(mnt, name)
	if b, err := os.ReadFile(c); err != nil || string(b) != "new file c\n" {
		t.Fatalf("%s through the mount: %q %v, want the new disk file", name, b, err)
	}
	if err := os.WriteFile(c, []byte("agent wrote c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "a.txt")); err != nil || string(b) != "old a\nappended by the agent\n" {
		t.Fatalf("a.txt through the mount after writing %s: %q %v", name, b, err)
	}
	if b, err := os.ReadFile(c); err != nil || string(b) != "agent wrote c\n" {
		t.Fatalf("%s through the mount after writing it: %q %v", name, b, err)
	}
	// a.txt is a conflict: removed on disk since the agent copied it.
	if r := f.ok("status", "a.txt", name); r.out != "C a.txt\nM "+name+"\n" {
		t.Fatalf("status: %s", r)
	}
}
