//go:build linux

package fusefs

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/draftfs/draftfs/overlay"
)

// Real tools at work in the mount. Each checks that the draft holds the
// result and that the disk did not change until a commit.

var gitEnv = []string{
	"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
	"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
}

func requireTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed", name)
	}
}

// unchanged fails the test if the disk differs from before.
func unchanged(t *testing.T, m *mounted, before map[string]string) {
	t.Helper()
	if diff := diffSnapshots(before, snapshot(t, m.root)); len(diff) > 0 {
		t.Fatalf("the disk changed before any commit: %v", diff)
	}
}

// hasStatus fails the test unless the draft's status has every want line.
func hasStatus(t *testing.T, m *mounted, want ...string) {
	t.Helper()
	got := statusPaths(t, m.d)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("draft status lacks %q; it has %q", w, got)
		}
	}
}

func TestToolGit(t *testing.T) {
	requireTool(t, "git")
	m := testMount(t, mountOptions{files: map[string]string{"a.txt": "one\n", "src/b.txt": "two\n"}})
	before := snapshot(t, m.root)
	git := func(args string) string { return shell(t, m.mnt, "git "+args, gitEnv...) }
	git("init -q -b main")
	git("add .")
	git("commit -q -m init")
	if err := os.WriteFile(filepath.Join(m.mnt, "a.txt"), []byte("one\nmore\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := git("status --porcelain"); got != " M a.txt\n" {
		t.Errorf("git status: %q", got)
	}
	git("stash -q")
	mustRead(t, filepath.Join(m.mnt, "a.txt"), "one\n")
	if got := git("status --porcelain"); got != "" {
		t.Errorf("git status after stash: %q", got)
	}
	git("stash pop -q")
	mustRead(t, filepath.Join(m.mnt, "a.txt"), "one\nmore\n")
	git("checkout -q -b feature")
	git("commit -q -am more")
	git("checkout -q main")
	mustRead(t, filepath.Join(m.mnt, "a.txt"), "one\n")
	git("checkout -q feature")
	mustRead(t, filepath.Join(m.mnt, "a.txt"), "one\nmore\n")
	if got := git("log --format=%s"); got != "more\ninit\n" {
		t.Errorf("git log: %q", got)
	}
	unchanged(t, m, before)
	hasStatus(t, m, "added .git/HEAD", "modified a.txt")

	if _, err := m.d.Commit(overlay.CommitOptions{Source: overlay.SourceCLI}); err != nil {
		t.Fatal(err)
	}
	// The repository works on disk after the commit.
	if got := shell(t, m.root, "git status --porcelain && git log --format=%s", gitEnv...); got != "more\ninit\n" {
		t.Errorf("git on disk after commit: %q", got)
	}
}

func TestToolGoBuildAndTest(t *testing.T) {
	requireTool(t, "go")
	m := testMount(t, mountOptions{files: map[string]string{
		"go.mod":       "module example.com/hello\n\ngo 1.22\n",
		"main.go":      "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(greeting()) }\n\nfunc greeting() string { return \"hello\" }\n",
		"main_test.go": "package main\n\nimport \"testing\"\n\nfunc TestGreeting(t *testing.T) {\n\tif greeting() != \"hello\" {\n\t\tt.Fatal(greeting())\n\t}\n}\n",
	}})
	before := snapshot(t, m.root)
	env := []string{"GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false"}
	shell(t, m.mnt, "go build -o app .", env...)
	if got := shell(t, m.mnt, "./app"); got != "hello\n" {
		t.Errorf("built program says %q", got)
	}
	if got := shell(t, m.mnt, "go test -count=1 ./...", env...); !strings.HasPrefix(got, "ok ") {
		t.Errorf("go test: %q", got)
	}
	// A change made through the mount is what the next build compiles.
	if err := os.WriteFile(filepath.Join(m.mnt, "main.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(greeting()) }\n\nfunc greeting() string { return \"hello\" }\n\nfunc init() { fmt.Println(\"changed\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shell(t, m.mnt, "go build -o app .", env...)
	if got := shell(t, m.mnt, "./app"); got != "changed\nhello\n" {
		t.Errorf("rebuilt program says %q", got)
	}
	unchanged(t, m, before)
	hasStatus(t, m, "added app", "modified main.go")
}

func TestToolSedInPlace(t *testing.T) {
	requireTool(t, "sed")
	m := testMount(t, mountOptions{files: map[string]string{"conf/app.ini": "name = old\nport = 1\n"}})
	before := snapshot(t, m.root)
	shell(t, m.mnt, "sed -i 's/old/new/' conf/app.ini")
	mustRead(t, filepath.Join(m.mnt, "conf/app.ini"), "name = new\nport = 1\n")
	unchanged(t, m, before)
	hasStatus(t, m, "modified conf/app.ini")
	if got := statusPaths(t, m.d); len(got) != 1 {
		t.Errorf("sed's temporary file left a trace: %q", got)
	}
}

// TestEditorAtomicSave saves as editors do: a temporary file, fsync,
// rename over the original.
func TestEditorAtomicSave(t *testing.T) {
	m := testMount(t, mountOptions{files: map[string]string{"doc.txt": "draft 1\n"}})
	before := snapshot(t, m.root)
	for i, text := range []string{"draft 2\n", "draft 3, longer\n", "4\n"} {
		tmp := filepath.Join(m.mnt, ".doc.txt.swp")
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatalf("save %d: fsync: %v", i, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(m.mnt, "doc.txt")); err != nil {
			t.Fatal(err)
		}
		mustRead(t, filepath.Join(m.mnt, "doc.txt"), text)
		if got := shell(t, m.mnt, "cat doc.txt"); got != text {
			t.Errorf("save %d: cat reads %q", i, got)
		}
	}
	unchanged(t, m, before)
	if got, want := statusPaths(t, m.d), []string{"modified doc.txt"}; !slices.Equal(got, want) {
		t.Errorf("status %q, want %q", got, want)
	}
}

func TestToolTarExtract(t *testing.T) {
	requireTool(t, "tar")
	src := t.TempDir()
	writeTree(t, src, map[string]string{"pkg/a.txt": "a\n", "pkg/sub/b.txt": "b\n", "pkg/empty/": ""})
	if err := os.Symlink("a.txt", filepath.Join(src, "pkg/link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(src, "pkg/sub/b.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	tarball := filepath.Join(t.TempDir(), "pkg.tar")
	shell(t, src, "tar cf "+tarball+" pkg")
	want := t.TempDir()
	shell(t, want, "tar xf "+tarball)

	m := testMount(t, mountOptions{files: map[string]string{"README": "r\n"}})
	before := snapshot(t, m.root)
	shell(t, m.mnt, "tar xf "+tarball)
	if diff := diffSnapshots(snapshot(t, filepath.Join(want, "pkg")), snapshot(t, filepath.Join(m.mnt, "pkg"))); len(diff) > 0 {
		t.Errorf("extracted tree differs from a plain directory's: %v", diff)
	}
	unchanged(t, m, before)
	hasStatus(t, m, "added pkg/a.txt", "added pkg/sub/b.txt", "added pkg/link")
}

func TestToolRmRf(t *testing.T) {
	files := map[string]string{"keep.txt": "k\n"}
	for _, p := range []string{"a", "a/b", "a/b/c", "d"} {
		files["tree/"+p+"/f.txt"] = p
	}
	m := testMount(t, mountOptions{files: files})
	before := snapshot(t, m.root)
	if err := os.WriteFile(filepath.Join(m.mnt, "tree/a/new.txt"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shell(t, m.mnt, "rm -rf tree")
	if _, err := os.Lstat(filepath.Join(m.mnt, "tree")); !os.IsNotExist(err) {
		t.Errorf("tree after rm -rf: %v", err)
	}
	if ents, err := os.ReadDir(m.mnt); err != nil || len(ents) != 1 {
		t.Errorf("mount after rm -rf: %d entries, %v", len(ents), err)
	}
	unchanged(t, m, before)
	hasStatus(t, m, "deleted tree")
}

func TestToolCpArchive(t *testing.T) {
	requireTool(t, "cp")
	m := testMount(t, mountOptions{files: map[string]string{"src/a.txt": "a\n", "src/x/y.txt": "y\n"}})
	if err := os.Symlink("a.txt", filepath.Join(m.root, "src/l")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(m.root, "src/x/y.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, m.root)
	shell(t, m.mnt, "cp -a src dst")
	if diff := diffSnapshots(snapshot(t, filepath.Join(m.mnt, "src")), snapshot(t, filepath.Join(m.mnt, "dst"))); len(diff) > 0 {
		t.Errorf("cp -a copy differs: %v", diff)
	}
	for _, p := range []string{"a.txt", "x/y.txt"} {
		s, d := lstat(t, filepath.Join(m.mnt, "src", p)), lstat(t, filepath.Join(m.mnt, "dst", p))
		if s.Mtim != d.Mtim {
			t.Errorf("%s: cp -a kept mtime %v, source %v", p, d.Mtim, s.Mtim)
		}
	}
	unchanged(t, m, before)
	hasStatus(t, m, "added dst/a.txt", "added dst/x/y.txt", "added dst/l")
}
