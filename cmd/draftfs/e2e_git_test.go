package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/draftfs/draftfs/overlay"
)

// The review tests on a real git repository: what an agent's tools do in
// the view (touch, sed, git) must show in status, diff and commit as
// what commit will change, and nothing else.

// gitRepo makes the fixture's workspace a git repository with files
// committed.
func (f *fixture) gitRepo(files map[string]string) {
	f.t.Helper()
	gitRun(f.t, f.ws, "init", "-q", "-b", "main")
	for k, v := range files {
		f.file(k, v)
	}
	gitRun(f.t, f.ws, "add", "-A")
	gitRun(f.t, f.ws, "commit", "-qm", "start")
}

// gitView is a fixture whose workspace is a git repository of files,
// served with the merged view mounted at mnt.
func gitView(t *testing.T, files map[string]string) (f *fixture, mnt string) {
	t.Helper()
	f = newFixture(t)
	f.gitRepo(files)
	mnt = filepath.Join(f.tmp, "view")
	f.serve(mnt)
	return f, mnt
}

// sh runs a shell command in dir (a mount: the process is not the
// daemon, which never enters its own mount), failing the test on error.
func sh(t *testing.T, dir, script string) string {
	t.Helper()
	c := exec.Command("sh", "-ec", script)
	c.Dir = dir
	c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=agent", "GIT_AUTHOR_EMAIL=agent@example.com",
		"GIT_COMMITTER_NAME=agent", "GIT_COMMITTER_EMAIL=agent@example.com", "GIT_CONFIG_NOSYSTEM=1")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}

// goModule is a small Go module to work on.
var goModule = map[string]string{
	"go.mod":  "module example.com/m\n\ngo 1.22\n",
	"go.sum":  "example.com/x v1.0.0 h1:abc=\n",
	"main.go": "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n",
	"args.go": "package main\n\nvar args = []string{\n\t\"a\",\n\t\"b\",\n}\n",
}

// TestNoopChangesInView: a touch, a sed that matched nothing and a git
// checkout back to the same content leave status, diff and commit
// empty.
func TestNoopChangesInView(t *testing.T) {
	f, mnt := gitView(t, goModule)
	sh(t, mnt, `touch go.sum
sed -i 's/nomatch/x/' main.go args.go
echo '// agent' >> main.go
cp main.go /dev/null
printf 'package main\n\nfunc main() {\n\tprintln("hi")\n}\n' > main.go
chmod 600 args.go && chmod 644 args.go`)
	for _, args := range [][]string{{"status"}, {"diff"}, {"diff", "--stat"}} {
		if r := f.ok(args...); r.out != "" {
			t.Errorf("draftfs %s: %s; want nothing", strings.Join(args, " "), r)
		}
	}
	if r := f.ok("commit"); !strings.Contains(r.out, "nothing to commit") {
		t.Errorf("draftfs commit: %s; want nothing to commit", r)
	}
	if r := f.ok("log"); !strings.Contains(r.out, "write") {
		t.Errorf("draftfs log: %s; want the writes logged", r)
	}
}

// need skips a test when a tool it drives is missing.
func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
}

// lines splits output into its lines.
func lines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// TestIgnoredFolded: after an agent makes a venv, installs an npm
// package and runs git in the view, status folds what git ignores (and
// .git/) into a line per top directory, diff leaves it out unless
// --ignored, and commit still applies it (unless --skip-ignored).
func TestIgnoredFolded(t *testing.T) {
	need(t, "python3", "npm")
	f := newFixture(t)
	files := map[string]string{".gitignore": ".venv/\nnode_modules/\n"}
	for k, v := range goModule {
		files[k] = v
	}
	f.gitRepo(files)
	if err := os.WriteFile(filepath.Join(f.ws, ".git", "info", "exclude"), []byte("*.log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The user's global excludes, where git looks by default (the daemon
	// inherits the variable).
	xdg := filepath.Join(f.tmp, "xdg")
	os.MkdirAll(filepath.Join(xdg, "git"), 0o755)
	os.WriteFile(filepath.Join(xdg, "git", "ignore"), []byte("*.swp\n"), 0o644)
	t.Setenv("XDG_CONFIG_HOME", xdg)
	// A package to install without the network.
	pkg := filepath.Join(f.tmp, "pkg")
	os.MkdirAll(filepath.Join(pkg, "lib"), 0o755)
	os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"leftpad-local","version":"1.0.0","main":"lib/index.js"}`), 0o644)
	os.WriteFile(filepath.Join(pkg, "lib", "index.js"), []byte("module.exports = s => ' ' + s\n"), 0o644)
	os.WriteFile(filepath.Join(pkg, "README.md"), []byte("# pad\n"), 0o644)
	tgz := strings.TrimSpace(sh(t, f.tmp, "npm pack --silent ./pkg"))
	mnt := filepath.Join(f.tmp, "view")
	f.serve(mnt)
	sh(t, mnt, `python3 -m venv --without-pip .venv
npm install --offline --no-audit --no-fund --silent `+filepath.Join(f.tmp, tgz)+`
echo trace > debug.log
echo swap > .main.go.swp
sed -i 's/hi/hello/' main.go
git status --short >/dev/null
echo '// scratch' >> args.go && git checkout args.go`)

	r := f.ok("status")
	got := lines(r.out)
	want := map[string]bool{"M main.go": true, "A package.json": true, "A package-lock.json": true, "A debug.log (ignored)": true, "A .main.go.swp (ignored)": true}
	var venv, nodeModules bool
	for _, l := range got {
		switch {
		case want[l]:
			delete(want, l)
		case strings.HasPrefix(l, "A .venv/ (") && strings.HasSuffix(l, " files, ignored)"):
			venv = true
		case strings.HasPrefix(l, "A node_modules/ (") && strings.HasSuffix(l, " files, ignored)"):
			nodeModules = true
		default:
			t.Errorf("status line %q: want only main.go, package files and folds", l)
		}
	}
	if len(want) > 0 || !venv || !nodeModules {
		t.Errorf("draftfs status:\n%s\nmissing %v (venv fold %v, node_modules fold %v)", r.out, want, venv, nodeModules)
	}
	if r := f.ok("status", "--ignored"); !strings.Contains(r.out, "A .venv/pyvenv.cfg\n") {
		t.Errorf("draftfs status --ignored: %s; want the venv's files listed", r)
	}
	var st []overlay.StatusEntry
	if err := json.Unmarshal([]byte(f.ok("status", "--json").out), &st); err != nil {
		t.Fatal(err)
	}
	for _, e := range st {
		if e.Path == ".venv/pyvenv.cfg" && (!e.Ignored || e.Fold != ".venv/") {
			t.Errorf("status --json: %+v; want it ignored, folded into .venv/", e)
		}
		if e.Path == "main.go" && e.Ignored {
			t.Errorf("status --json: %+v; main.go is not ignored", e)
		}
	}

	r = f.ok("diff")
	if !strings.Contains(r.out, "+++ b/main.go") || strings.Contains(r.out, "diff --git a/.venv/") || strings.Contains(r.out, "diff --git a/node_modules/") || strings.Contains(r.out, "diff --git a/.git/") {
		t.Errorf("draftfs diff: %s; want main.go and not what git ignores", r)
	}
	if !strings.Contains(r.err, "git ignores not shown") {
		t.Errorf("draftfs diff: %s; want a note of what it left out", r)
	}
	if r := f.ok("diff", "--ignored"); !strings.Contains(r.out, "+++ b/.venv/pyvenv.cfg") {
		t.Errorf("draftfs diff --ignored: %s; want the venv's files", r)
	}

	r = f.ok("commit", "--dry-run")
	if n := len(lines(r.out)); n > 10 || !strings.Contains(r.out, "would commit ") || !strings.Contains(r.out, "ignored by git") {
		t.Errorf("draftfs commit --dry-run: %s; want a folded report with a summary", r)
	}
	f.ok("commit", "--skip-ignored")
	if _, err := os.Stat(filepath.Join(f.ws, ".venv")); err == nil {
		t.Errorf("commit --skip-ignored wrote .venv to disk")
	}
	if f.disk("main.go") != strings.Replace(goModule["main.go"], "hi", "hello", 1) {
		t.Errorf("main.go on disk: %q", f.disk("main.go"))
	}
	f.ok("commit")
	if _, err := os.Stat(filepath.Join(f.ws, ".venv", "pyvenv.cfg")); err != nil {
		t.Errorf("commit did not apply the ignored venv: %v", err)
	}
	if got := gitRun(t, f.ws, "status", "--porcelain"); !strings.Contains(got, " M main.go\n") || strings.Contains(got, ".venv") || strings.Contains(got, "node_modules") {
		t.Errorf("git status on disk after commit: %q; want main.go modified and the ignored paths ignored", got)
	}
}

// TestAgentGitInView: an agent's git status in the view (an index
// refresh) is no change, so a user's git add meanwhile commits without a
// conflict; an agent's git commit and a user's git add of other files
// merge in the index; staging different content for one file is a
// conflict that says so.
func TestAgentGitInView(t *testing.T) {
	f, mnt := gitView(t, goModule)

	sh(t, mnt, "git status --short >/dev/null")
	f.file("go.mod", goModule["go.mod"]+"\nrequire example.com/x v1.0.0\n")
	gitRun(t, f.ws, "add", "go.mod")
	if r := f.ok("status", "--ignored"); r.out != "" {
		t.Errorf("status after the agent's git status: %s; want nothing", r)
	}
	f.ok("commit")
	if got := gitRun(t, f.ws, "diff", "--cached", "--name-only"); got != "go.mod\n" {
		t.Errorf("the user's staging after commit: %q, want go.mod", got)
	}

	// The agent commits its change; the user stages another file.
	sh(t, mnt, `sed -i 's/hi/hello/' main.go
git add main.go
git commit -qm 'agent: say hello'`)
	f.file("args.go", strings.Replace(goModule["args.go"], `"b"`, `"c"`, 1))
	gitRun(t, f.ws, "add", "args.go")
	// The index changed on both sides: flagged, and merged by commit.
	r := f.ok("status")
	if !strings.Contains(r.out, "M main.go\n") || !strings.Contains(r.out, "M .git/ (") || !strings.Contains(r.out, "C .git/index\n") {
		t.Errorf("status: %s; want main.go, a .git/ fold and the index flagged", r)
	}
	r = f.ok("commit")
	if !strings.Contains(r.out, "M .git/index (merged with your changes)") {
		t.Errorf("commit: %s; want the index merged", r)
	}
	if got := gitRun(t, f.ws, "log", "-1", "--format=%s"); got != "agent: say hello\n" {
		t.Errorf("HEAD on disk: %q, want the agent's commit", got)
	}
	// The view showed the user's go.mod staged: the agent's commit has it.
	if got := gitRun(t, f.ws, "status", "--porcelain"); got != "M  args.go\n" {
		t.Errorf("git status on disk: %q, want the user's args.go still staged, main.go and go.mod committed", got)
	}

	// Both stage different content for one file: a conflict in words
	// that fit.
	sh(t, mnt, `echo '// agent' >> main.go && git add main.go`)
	f.file("main.go", "// user\n"+f.disk("main.go"))
	gitRun(t, f.ws, "add", "main.go")
	r = f.run("commit")
	if r.code != 1 || !strings.Contains(r.err, "C .git/index: you and the agent staged different content") || strings.Contains(r.err, "same lines") {
		t.Errorf("commit: %s; want a conflict on git's index, said so", r)
	}
}

// TestMergedDiff: when the user changed a file the agent changed too
// and the two merge, diff shows the merge (the user's edit is never
// shown as removed), marked, and applying it to what the user has gives
// byte for byte what commit writes.
func TestMergedDiff(t *testing.T) {
	need(t, "sed")
	var b strings.Builder
	b.WriteString("package main\n\nvar args = []string{\n")
	for i := 4; i <= 120; i++ {
		fmt.Fprintf(&b, "\t\"arg%d\",\n", i)
	}
	b.WriteString("}\n")
	f, mnt := gitView(t, map[string]string{"args.go": b.String(), "go.mod": goModule["go.mod"]})
	sh(t, mnt, `sed -i '20s/$/ \/\/ agent/' args.go`)
	sh(t, f.ws, `sed -i '100s/$/ \/\/ user/' args.go`)

	r := f.ok("diff", "args.go")
	if !strings.HasPrefix(r.out, "# merged: you changed args.go too") {
		t.Errorf("diff: %s; want it marked as merged", r)
	}
	if strings.Contains(r.out, "// user") && !strings.Contains(r.out, "\n \t\"arg100\", // user\n") {
		t.Errorf("diff shows the user's edit as a change: %s", r.out)
	}
	if !strings.Contains(r.out, "+\t\"arg20\", // agent\n") {
		t.Errorf("diff: %s; want the agent's edit", r.out)
	}
	if r := f.ok("diff", "--stat"); !strings.Contains(r.out, "args.go (merged) | 2 +-") {
		t.Errorf("diff --stat: %s; want args.go marked merged", r)
	}
	if r := f.ok("commit", "--dry-run"); !strings.Contains(r.out, "M args.go (merged with your changes)\n") || !strings.Contains(r.out, "1 merged") {
		t.Errorf("commit --dry-run: %s; want args.go as a merge", r)
	}

	// Apply the diff to a copy of what the user has.
	scratch := filepath.Join(f.tmp, "scratch")
	os.MkdirAll(scratch, 0o755)
	os.WriteFile(filepath.Join(scratch, "args.go"), []byte(f.disk("args.go")), 0o644)
	c := exec.Command("git", "apply", "-")
	c.Dir, c.Stdin = scratch, strings.NewReader(r.out)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git apply of the diff: %v\n%s", err, out)
	}
	f.ok("commit")
	want, _ := os.ReadFile(filepath.Join(scratch, "args.go"))
	if got := f.disk("args.go"); got != string(want) {
		t.Errorf("commit wrote\n%s\nthe diff applied gives\n%s", got, want)
	}
	if got := f.disk("args.go"); !strings.Contains(got, "\"arg20\", // agent\n") || !strings.Contains(got, "\"arg100\", // user\n") {
		t.Errorf("commit wrote %q; want both edits", got)
	}
}

// TestBothCommitted: the agent commits in the view while the user
// commits on disk: reflogs, the index and git's scratch files merge, and
// the one real clash, the branch both moved, is reported as that.
func TestBothCommitted(t *testing.T) {
	f, mnt := gitView(t, goModule)
	sh(t, mnt, `sed -i 's/hi/hello/' main.go
git add main.go
git commit -qm 'agent: say hello'`)
	f.file("args.go", strings.Replace(goModule["args.go"], `"b"`, `"c"`, 1))
	gitRun(t, f.ws, "commit", "-qam", "user: c")

	r := f.run("commit")
	if r.code != 1 || strings.Count(r.err, "\n  C ") != 1 || !strings.Contains(r.err, "C .git/refs/heads/main: you and the agent both moved branch main") {
		t.Fatalf("commit: %s; want one conflict, the branch both moved, said so", r)
	}
	f.ok("discard", ".git/refs/heads/main")
	r = f.ok("commit")
	if !strings.Contains(r.out, ".git/logs/HEAD (merged with your changes)") {
		t.Errorf("commit: %s; want the reflog merged", r)
	}
	if got := gitRun(t, f.ws, "log", "-1", "--format=%s"); got != "user: c\n" {
		t.Errorf("HEAD on disk: %q, want the user's commit kept", got)
	}
	log := gitRun(t, f.ws, "reflog", "--format=%gs")
	if !strings.Contains(log, "user: c") || !strings.Contains(log, "agent: say hello") {
		t.Errorf("reflog on disk: %q; want both commits", log)
	}
	if got := gitRun(t, f.ws, "fsck", "--no-dangling"); strings.Contains(got, "error") {
		t.Errorf("git fsck: %s", got)
	}
}
