//go:build linux

package overlay

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"
	bolt "go.etcd.io/bbolt"
)

// viewSnapshot is the merged view: each path's type and mode, and a
// file's content or a symlink's target.
func viewSnapshot(t testing.TB, f afero.Fs) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := afero.Walk(f, "/", func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		switch {
		case fi.Mode().IsRegular():
			b, err := afero.ReadFile(f, p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := f.(afero.LinkReader).ReadlinkIfPossible(p)
			if err != nil {
				return err
			}
			v += " -> " + target
		}
		out[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffSnapshots(a, b map[string]string) string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, fmt.Sprintf("%s: %q, want %q", k, b[k], v))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("%s: %q, not wanted", k, b[k]))
		}
	}
	return strings.Join(out, "\n")
}

// rewindSteps makes three steps of changes, each a checkpoint, and
// returns the view after each.
func rewindSteps(t testing.TB, d *Draft) []map[string]string {
	f := d.Fs(SourceMount)
	var snaps []map[string]string
	step := func(a Author, fn func()) {
		end := d.BeginStep(a, "step")
		fn()
		cp, err := end()
		if err != nil || cp == nil {
			t.Fatalf("checkpoint: %v %v", cp, err)
		}
		snaps = append(snaps, viewSnapshot(t, f))
	}
	step(Author{Source: SourceMount, Name: "sh"}, func() {
		must(t, afero.WriteFile(f, "a.txt", []byte("a1\n"), 0o644))
		must(t, afero.WriteFile(f, "dir/new.txt", []byte("new\n"), 0o600))
		must(t, f.Remove("gone.txt"))
	})
	step(Author{Source: SourceACP, Name: "agent"}, func() {
		must(t, afero.WriteFile(f, "a.txt", []byte("a2\nmore\n"), 0o644))
		must(t, f.Rename("dir", "dir2"))
		must(t, f.Chmod("keep.txt", 0o755))
		must(t, afero.Fs(f).(afero.Linker).SymlinkIfPossible("a.txt", "link"))
	})
	step(Author{Source: SourceMCP, Name: "client"}, func() {
		must(t, f.Remove("a.txt"))
		must(t, afero.WriteFile(f, "dir2/new.txt", []byte("newer\n"), 0o600))
		must(t, afero.WriteFile(f, "keep.txt", []byte("kept, changed\n"), 0o755))
	})
	return snaps
}

// TestRewind rewinds across checkpoints: the view is then byte for byte
// what it was right after the checkpoint, and rewinding the rewind
// brings back the later state.
func TestRewind(t *testing.T) {
	root := t.TempDir()
	cmWrite(t, root, map[string]string{"gone.txt": "g\n", "keep.txt": "k\n", "dir/old.txt": "o\n"})
	w, err := Open(Options{Root: root, StateDir: t.TempDir()})
	must(t, err)
	defer w.Close()
	d, _ := w.Draft("")
	snaps := rewindSteps(t, d)
	tlA, err := d.Timeline()
	must(t, err)
	if len(tlA) != 3 || tlA[0].Author.Source != SourceMCP || tlA[2].Author.Name != "sh" {
		t.Fatalf("timeline: %+v", tlA)
	}
	if tlA[1].Added != 3 || tlA[1].Deleted != 2 || !strings.Contains(strings.Join(tlA[1].Files, ","), "dir2") {
		t.Fatalf("step 2: %+v", tlA[1])
	}
	first := tlA[2].ID
	cp, err := d.Rewind(first, Author{Source: SourceCLI})
	must(t, err)
	if cp.Rewound != first {
		t.Fatalf("rewind checkpoint: %+v", cp)
	}
	if s := diffSnapshots(snaps[0], viewSnapshot(t, d.Fs(SourceCLI))); s != "" {
		t.Fatalf("after rewind to %d:\n%s", first, s)
	}
	// The rewind's own diff shows the directory renamed back.
	diffs, err := d.DiffCheckpoints(cp.ID-1, cp.ID)
	must(t, err)
	renamedBack := false
	for _, fd := range diffs {
		renamedBack = renamedBack || fd.Path == "dir/" && fd.From == "dir2" && fd.Change == StatusRenamed && strings.Contains(fd.Patch, "rename from dir2\nrename to dir\n")
	}
	if !renamedBack {
		t.Errorf("the rewind's diff does not rename dir2 back to dir: %+v", diffs)
	}
	// The rewind is a step: rewinding to the one before it (the third)
	// brings the later state back.
	if _, err := d.Rewind(tlA[0].ID, Author{Source: SourceCLI}); err != nil {
		t.Fatal(err)
	}
	if s := diffSnapshots(snaps[2], viewSnapshot(t, d.Fs(SourceCLI))); s != "" {
		t.Fatalf("after rewinding the rewind:\n%s", s)
	}
	// And across a reopen.
	if _, err := d.Rewind(tlA[1].ID, Author{Source: SourceCLI}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w, err = Open(Options{Root: root, StateDir: d.dir[:strings.Index(d.dir, "/drafts/")]})
	must(t, err)
	d, _ = w.Draft("")
	if s := diffSnapshots(snaps[1], viewSnapshot(t, d.Fs(SourceCLI))); s != "" {
		t.Fatalf("after a rewind and a reopen:\n%s", s)
	}
}

// rewindWorker opens the state, says READY, and on a line from stdin
// rewinds to the checkpoint named by DRAFTFS_REWIND_TO and says DONE.
func rewindWorker(d *Draft) {
	id, _ := strconv.ParseUint(os.Getenv("DRAFTFS_REWIND_TO"), 10, 64)
	if at := os.Getenv("DRAFTFS_REWIND_KILL_AT"); at != "" {
		testHookRewind = func(step string) {
			if step == at {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
	}
	fmt.Println("READY")
	bufio.NewScanner(os.Stdin).Scan()
	if _, err := d.Rewind(id, Author{Source: SourceCLI}); err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Println("DONE")
}

// TestRewindKilled kills a rewind at each of its steps and then at
// random moments: the next open shows the draft as it was before the
// rewind or as the checkpoint left it, never a mix.
func TestRewindKilled(t *testing.T) {
	steps := []string{"", "staged", "journaled", "renamed", "done"}
	rounds := len(steps) + 8
	if testing.Short() {
		rounds = len(steps) + 2
	}
	onTmpfs(t)
	r, seed := killSeed(t)
	var full time.Duration
	outcomes := map[string]int{}
	for round := 0; round < rounds; round++ {
		root, state := t.TempDir(), t.TempDir()
		tree := map[string]string{"gone.txt": "g\n", "keep.txt": "k\n", "dir/old.txt": "o\n"}
		for i := range 100 {
			tree[fmt.Sprintf("many/f%03d", i)] = fmt.Sprintf("v0 %d\n", i)
		}
		cmWrite(t, root, tree)
		w, err := Open(Options{Root: root, StateDir: state})
		must(t, err)
		d, _ := w.Draft("")
		f := d.Fs(SourceMount)
		end := d.BeginStep(Author{Source: SourceMount}, "many")
		for i := range 100 {
			must(t, afero.WriteFile(f, fmt.Sprintf("many/f%03d", i), []byte(fmt.Sprintf("v1 %d\n", i)), 0o644))
		}
		if _, err := end(); err != nil {
			t.Fatal(err)
		}
		after := viewSnapshot(t, f)
		snaps := rewindSteps(t, d)
		tlA, err := d.Timeline()
		must(t, err)
		target := tlA[len(tlA)-1].ID // the first: many files to put back
		before := snaps[2]
		w.Close()

		killAt := ""
		if round < len(steps) {
			killAt = steps[round]
		}
		wk := startWorker(t, "rewind", root, state,
			"DRAFTFS_REWIND_TO="+strconv.FormatUint(target, 10), "DRAFTFS_REWIND_KILL_AT="+killAt)
		if killAt != "" {
			wk.expect("READY")
			wk.send("go")
			wk.wait() // it kills itself at that step
		} else if full = wk.interrupt(r, full); round == 0 {
			t.Logf("a rewind of %d paths takes %v", len(before), full)
		}
		w, d = reopenAfterKill(t, root, state, fmt.Sprintf("round %d (seed %d)", round, seed))
		got := viewSnapshot(t, d.Fs(SourceCLI))
		switch {
		case diffSnapshots(before, got) == "" && (killAt == "" || killAt == "staged"):
			outcomes["not begun"]++
		case diffSnapshots(after, got) == "":
			outcomes["finished"]++
		default:
			t.Fatalf("round %d (seed %d, killed at %q): not as the rewind left it:\n%s", round, seed, killAt, diffSnapshots(after, got))
		}
		w.Close()
	}
	t.Logf("outcomes: %v", outcomes)
}

// TestQuietCheckpoint: writes through the mount make one checkpoint once
// the draft is quiet, none while a step is under way.
func TestQuietCheckpoint(t *testing.T) {
	w, err := Open(Options{Root: t.TempDir(), StateDir: t.TempDir(), Quiet: 20 * time.Millisecond})
	must(t, err)
	defer w.Close()
	d, _ := w.Draft("")
	f := d.Fs(SourceMount)
	end := d.BeginStep(Author{Source: SourceMCP, Name: "c"}, "call")
	must(t, afero.WriteFile(f, "a", []byte("a\n"), 0o644))
	time.Sleep(100 * time.Millisecond) // several quiet periods: the step holds them
	if cps, _ := d.Timeline(); len(cps) != 0 {
		t.Fatalf("a checkpoint during a step: %+v", cps)
	}
	if cp, err := end(); err != nil || cp == nil || cp.Author.Name != "c" {
		t.Fatalf("the step's checkpoint: %+v %v", cp, err)
	}
	must(t, afero.WriteFile(f, "b", []byte("b\n"), 0o644))
	must(t, afero.WriteFile(f, "c", []byte("c\n"), 0o644))
	deadline := time.Now().Add(time.Minute) // a watchdog, not a timing
	for {
		cps, err := d.Timeline()
		must(t, err)
		// One checkpoint, or more when the machine is slow enough to
		// leave a quiet period between the two writes.
		var files []string
		for _, cp := range cps[:len(cps)-1] {
			if cp.Author.Source != SourceMount {
				t.Fatalf("a quiet period's checkpoint: %+v", cp)
			}
			files = append(files, cp.Files...)
		}
		if strings.Join(files, ",") == "c,b" || strings.Join(files, ",") == "b,c" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint after the writes: %+v", cps)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAuthorsInLog: changes made through Fs.As are logged and published
// by who made them; writes by two processes to one file do not
// coalesce into one entry; a quiet period's checkpoint names them all;
// a checkpoint's LogEnd says which entries its state holds.
func TestAuthorsInLog(t *testing.T) {
	w, err := Open(Options{Root: t.TempDir(), StateDir: t.TempDir(), Quiet: 20 * time.Millisecond})
	must(t, err)
	defer w.Close()
	sub := w.Subscribe()
	defer sub.Close()
	d, _ := w.Draft("")
	f := d.Fs(SourceMount)
	must(t, afero.WriteFile(f.As("sh -c make"), "a", []byte("a\n"), 0o644))
	must(t, afero.WriteFile(f.As("sh -c make"), "a", []byte("aa\n"), 0o644))
	must(t, afero.WriteFile(f.As("vim a"), "a", []byte("aaa\n"), 0o644))
	must(t, f.As("rm a").Remove("a"))
	must(t, afero.WriteFile(f, "b", []byte("b\n"), 0o644))
	log, err := d.Log()
	must(t, err)
	var got []string
	for _, l := range log {
		got = append(got, l.Op+" "+l.Path+" "+string(l.Source)+" "+l.By)
	}
	want := []string{"create a mount sh -c make", "write a mount vim a", "delete a mount rm a", "create b mount "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if c := <-sub.C; c.Source != SourceMount || c.By != "sh -c make" {
		t.Errorf("the first change published: %+v", c)
	}
	deadline := time.Now().Add(time.Minute) // a watchdog, not a timing
	for {
		cps, err := d.Timeline()
		must(t, err)
		if len(cps) > 0 && cps[0].LogEnd == uint64(len(log)) {
			names := ""
			for i := len(cps) - 1; i >= 0; i-- {
				names += cps[i].Author.Name + "; "
			}
			// One quiet period, or more on a slow machine: in order.
			if !strings.Contains(names, "sh -c make") || !strings.Contains(names, "vim a") || !strings.Contains(names, "rm a") {
				t.Errorf("quiet checkpoints' authors %q: want every writer", names)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint holding the whole log: %+v", cps)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRewindRandomSteps makes random changes of every kind, a
// checkpoint after each few (captures after the first read only what
// the draft touched; verifyCaptures checks each against a whole read),
// then rewinds to random checkpoints: each gives the view back as it
// was. A handle stays open for writing across checkpoints.
func TestRewindRandomSteps(t *testing.T) {
	root := t.TempDir()
	cmWrite(t, root, map[string]string{"a": "a\n", "d/b": "b\n", "d/c": "c\n"})
	w, err := Open(Options{Root: root, StateDir: t.TempDir()})
	must(t, err)
	defer w.Close()
	d, _ := w.Draft("")
	f := d.Fs(SourceMount)
	r := rand.New(rand.NewSource(1))
	names := []string{"a", "d/b", "d/c", "n1", "d/n2", "e/n3"}
	pick := func() string { return names[r.Intn(len(names))] }
	held, err := f.OpenFile("held", os.O_RDWR|os.O_CREATE, 0o644)
	must(t, err)
	defer held.Close()
	type step struct {
		id   uint64
		snap map[string]string
	}
	var steps []step
	for i := range 60 {
		for range 1 + r.Intn(3) {
			p := pick()
			switch r.Intn(9) {
			case 0, 1:
				f.MkdirAll(path.Dir(p), 0o755)
				afero.WriteFile(f, p, fmt.Appendf(nil, "%d %d\n", i, r.Int()), 0o644)
			case 2:
				f.Truncate(p, int64(r.Intn(3)))
			case 3:
				mt := time.Unix(int64(r.Intn(1e9)), 0)
				f.Chtimes(p, mt, mt)
			case 4:
				f.Chmod(p, os.FileMode(0o600+r.Intn(0o200)))
			case 5:
				f.Remove(p)
			case 6:
				f.MkdirAll(path.Dir(p), 0o755)
				f.Rename(pick(), p)
			case 7:
				if h, err := f.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0); err == nil {
					h.Write([]byte("appended\n"))
					h.Close()
				}
			case 8:
				held.WriteAt(fmt.Appendf(nil, "%d\n", i), int64(r.Intn(16)))
			}
		}
		cp, err := d.Checkpoint(Author{Source: SourceMount}, "")
		must(t, err)
		if cp != nil {
			steps = append(steps, step{cp.ID, viewSnapshot(t, f)})
		}
	}
	must(t, held.Close())
	for range 8 {
		s := steps[r.Intn(len(steps))]
		if _, err := d.Rewind(s.id, Author{Source: SourceCLI}); err != nil {
			t.Fatal(err)
		}
		if diff := diffSnapshots(s.snap, viewSnapshot(t, f)); diff != "" {
			t.Fatalf("after rewinding to %d:\n%s", s.id, diff)
		}
	}
}

// TestCheckpointAfterReopenReadsOnlyChanges: the first checkpoint after
// the draft opens again takes what the last one found in the files that
// did not change (the same records, not read again), and reads the
// changed one.
func TestCheckpointAfterReopenReadsOnlyChanges(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	w, err := Open(Options{Root: root, StateDir: state})
	must(t, err)
	d, _ := w.Draft("")
	f := d.Fs(SourceMount)
	for i := range 20 {
		must(t, afero.WriteFile(f, fmt.Sprintf("f%d", i), fmt.Appendf(nil, "%d\n", i), 0o644))
	}
	_, err = d.Checkpoint(Author{Source: SourceMount}, "")
	must(t, err)
	w.Close()

	w, err = Open(Options{Root: root, StateDir: state})
	must(t, err)
	defer w.Close()
	d, _ = w.Draft("")
	must(t, afero.WriteFile(d.Fs(SourceMount), "f0", []byte("changed\n"), 0o644))
	d.tl.mu.Lock()
	before, err := d.tl.lastState()
	d.tl.mu.Unlock()
	must(t, err)
	cp, err := d.Checkpoint(Author{Source: SourceMount}, "")
	must(t, err)
	if cp == nil || len(cp.Files) != 1 || cp.Files[0] != "f0" {
		t.Fatalf("checkpoint after reopening: %+v", cp)
	}
	after := d.tl.last
	for ino, cd := range after.Data {
		changed := after.Entries["f0"].Ino == ino
		if same := before.Data[ino] == cd; same == changed {
			t.Errorf("inode %d (changed: %v): record taken from the last checkpoint: %v", ino, changed, same)
		}
	}
}

// TestTimelineExpires keeps the last checkpoints only, and the chunks
// they use: a rewind to a kept one still works, and the chunks of
// contents only dropped checkpoints had are gone.
func TestTimelineExpires(t *testing.T) {
	v := newVersions(t, 2)
	for i := range 50 { // the 50th expires
		v.checkpoint(i)
	}
	d, f := v.d, v.f
	ids, err := d.tl.ids()
	must(t, err)
	if len(ids) != 2 || ids[0] != 49 {
		t.Fatalf("checkpoints kept: %v", ids)
	}
	var chunks int
	must(t, d.tl.chunks.view(func(b *bolt.Bucket) error {
		chunks = b.Stats().KeyN
		return nil
	}))
	// Each kept checkpoint's state's chunks and its version of f.
	used := map[string]bool{}
	for _, id := range ids {
		cp, err := d.tl.read(id)
		must(t, err)
		st, err := d.tl.state(cp)
		must(t, err)
		for _, h := range cp.State {
			used[h] = true
		}
		forEachChunk(st, func(h string) { used[h] = true })
	}
	if chunks != len(used) || len(used) < 4 {
		t.Errorf("%d chunks kept, want the %d the kept checkpoints use", chunks, len(used))
	}
	_, err = d.Rewind(49, Author{Source: SourceCLI})
	must(t, err)
	if b, _ := afero.ReadFile(f, "f"); string(b) != "version 48\n" {
		t.Errorf("after rewinding to 49: %q", b)
	}
}

// TestTimelineForgetsGoneFiles: what the timeline remembers of each data
// file's content does not outlive the file (an agent that creates and
// deletes thousands of files, over and over, would grow it without end).
func TestTimelineForgetsGoneFiles(t *testing.T) {
	w, err := Open(Options{Root: t.TempDir(), StateDir: t.TempDir()})
	must(t, err)
	defer w.Close()
	d, _ := w.Draft("")
	f := d.Fs(SourceMount)
	for round := range 3 {
		for i := range 100 {
			must(t, afero.WriteFile(f, fmt.Sprintf("f%d", i), fmt.Appendf(nil, "%d %d\n", round, i), 0o644))
		}
		_, err := d.Checkpoint(Author{Source: SourceMount}, "")
		must(t, err)
		for i := range 100 {
			must(t, f.Remove(fmt.Sprintf("f%d", i)))
		}
		_, err = d.Checkpoint(Author{Source: SourceMount}, "")
		must(t, err)
	}
	if n := len(d.tl.known); n != 0 {
		t.Errorf("the timeline remembers %d files the draft no longer has", n)
	}
}
