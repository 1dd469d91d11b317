//go:build linux

package vfstest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/draftfs/draftfs/overlay"
)

// nameCases are about names: renames, links, directories.
var nameCases = []Case{
	{
		Name: "rename over an existing file",
		Tree: map[string]string{"a": "from a", "b": "from b"},
		Run: func(t *testing.T, e Env) {
			ino := InoOf(t, e.FS(), "a")
			Must(t, e.FS().Rename("a", "b"))
			WantContent(t, e.FS(), "b", "from a")
			WantMissing(t, e.FS(), "a")
			if got := InoOf(t, e.FS(), "b"); got != ino {
				t.Fatalf("b's inode %d, want a's %d", got, ino)
			}
			WantNames(t, e.FS(), "", "b")
			// A draft file over a draft file.
			MustWrite(t, e.FS(), "c", "new c")
			Must(t, e.FS().Rename("c", "b"))
			WantContent(t, e.FS(), "b", "new c")
			WantNames(t, e.FS(), "", "b")
		},
	},
	{
		Name: "rename errors",
		Tree: map[string]string{"f": "f", "d/x": "x", "e/": "", "g/": ""},
		Run: func(t *testing.T, e Env) {
			WantErrno(t, "dir into itself", e.FS().Rename("d", "d/sub"), syscall.EINVAL)
			WantErrno(t, "dir over file", e.FS().Rename("d", "f"), syscall.ENOTDIR)
			WantErrno(t, "file over dir", e.FS().Rename("f", "e"), syscall.EISDIR)
			WantErrno(t, "dir over non-empty dir", e.FS().Rename("e", "d"), syscall.ENOTEMPTY)
			WantErrno(t, "missing source", e.FS().Rename("nope", "x"), syscall.ENOENT)
			WantErrno(t, "missing target parent", e.FS().Rename("f", "no/f"), syscall.ENOENT)
			WantErrno(t, "target parent a file", e.FS().Rename("d", "f/d"), syscall.ENOTDIR)
			Must(t, e.FS().Rename("e", "g")) // over an empty directory
			WantNames(t, e.FS(), "", "d", "f", "g")
			Must(t, e.FS().Rename("f", "f")) // onto itself: nothing happens
			WantContent(t, e.FS(), "f", "f")
		},
	},
	{
		Name: "hard links",
		Tree: map[string]string{"f": "shared"},
		Run: func(t *testing.T, e Env) {
			Must(t, e.FS().Link("f", "g"))
			for _, n := range []string{"f", "g"} {
				fi, err := e.FS().Lstat(n)
				Must(t, err)
				if Nlink(t, fi) != 2 {
					t.Fatalf("%s: nlink %d, want 2", n, Nlink(t, fi))
				}
			}
			if InoOf(t, e.FS(), "f") != InoOf(t, e.FS(), "g") {
				t.Fatal("two names of one file have different inode numbers")
			}
			f, err := e.FS().OpenFile("g", os.O_WRONLY|os.O_TRUNC, 0)
			Must(t, err)
			_, err = f.Write([]byte("through g"))
			Must(t, err)
			Must(t, f.Close())
			WantContent(t, e.FS(), "f", "through g")
			Must(t, e.FS().Chmod("f", 0o600))
			fi, err := e.FS().Lstat("g")
			Must(t, err)
			if fi.Mode() != 0o600 {
				t.Fatalf("g's mode %v after chmod of f, want 0600", fi.Mode())
			}
			Must(t, e.FS().Remove("f"))
			fi, err = e.FS().Lstat("g")
			Must(t, err)
			if Nlink(t, fi) != 1 {
				t.Fatalf("g: nlink %d after f went, want 1", Nlink(t, fi))
			}
			WantContent(t, e.FS(), "g", "through g")
			WantErrno(t, "link over an existing name", e.FS().Link("g", "g"), syscall.EEXIST)
			WantErrno(t, "link a missing file", e.FS().Link("nope", "h"), syscall.ENOENT)
			Must(t, e.FS().Mkdir("d", 0o755))
			WantErrno(t, "link a directory", e.FS().Link("d", "h"), syscall.EPERM)
			e.Reopen()
			Must(t, e.FS().Link("g", "d/h"))
			Must(t, e.FS().Rename("g", "d/g"))
			MustWrite(t, e.FS(), "d/h", "after reopen")
			WantContent(t, e.FS(), "d/g", "after reopen")
		},
	},
	{
		Name: "symbolic links",
		Tree: map[string]string{"dir/file": "in dir", "rel": "->dir/file", "dirlink": "->dir", "loop": "->loop"},
		Run: func(t *testing.T, e Env) {
			WantContent(t, e.FS(), "rel", "in dir")
			MustWrite(t, e.FS(), "dir/file", "changed in draft")
			WantContent(t, e.FS(), "rel", "changed in draft")
			Must(t, e.FS().Symlink(filepath.Join(e.Root(), "dir", "file"), "abs"))
			WantContent(t, e.FS(), "abs", "changed in draft")
			Must(t, e.FS().Symlink("../rel", "dir/up"))
			WantContent(t, e.FS(), "dir/up", "changed in draft")
			target, err := e.FS().Readlink("abs")
			Must(t, err)
			if target != filepath.Join(e.Root(), "dir", "file") {
				t.Fatalf("readlink abs = %q", target)
			}
			fi, err := e.FS().Lstat("abs")
			Must(t, err)
			if fi.Mode()&fs.ModeSymlink == 0 || fi.Size() != int64(len(target)) {
				t.Fatalf("lstat of a symlink: mode %v size %d", fi.Mode(), fi.Size())
			}
			_, err = e.FS().Readlink("dir/file")
			WantErrno(t, "readlink of a file", err, syscall.EINVAL)
			_, err = e.FS().Stat("loop")
			WantErrno(t, "stat a symlink loop", err, syscall.ELOOP)
			WantErrno(t, "symlink over an existing name", e.FS().Symlink("x", "rel"), syscall.EEXIST)
			Must(t, e.FS().Symlink("/etc/passwd", "escape"))
			if _, ok := e.(Resolver); ok { // through a mount, the kernel follows it
				_, err = e.FS().Open("escape")
				if !errors.Is(err, overlay.ErrOutside) {
					t.Fatalf("open through a symlink leaving the workspace: %v, want ErrOutside", err)
				}
			}
			ents, err := e.FS().ReadDir("dirlink")
			Must(t, err)
			if len(ents) != 2 || ents[0].Name() != "file" || ents[1].Name() != "up" {
				t.Fatalf("ReadDir through a symlink: %v", ents)
			}
		},
	},
	{
		Name: "directory rename keeps its subtree and inode numbers",
		Tree: map[string]string{"d/x": "x", "d/e/y": "y", "d/e/z": "z", "other": "o"},
		Run: func(t *testing.T, e Env) {
			inos := map[string]uint64{}
			for _, k := range []string{"d", "d/x", "d/e", "d/e/y"} {
				inos[k] = InoOf(t, e.FS(), k)
			}
			MustWrite(t, e.FS(), "d/e/z", "z in draft")
			MustWrite(t, e.FS(), "d/new", "new")
			Must(t, e.FS().Remove("d/x"))
			Must(t, e.FS().Rename("d", "n"))
			WantMissing(t, e.FS(), "d")
			WantNames(t, e.FS(), "", "n", "other")
			WantNames(t, e.FS(), "n", "e", "new")
			WantNames(t, e.FS(), "n/e", "y", "z")
			WantContent(t, e.FS(), "n/e/y", "y")
			WantContent(t, e.FS(), "n/e/z", "z in draft")
			WantContent(t, e.FS(), "n/new", "new")
			for _, k := range []string{"d", "d/e", "d/e/y"} {
				if got := InoOf(t, e.FS(), "n"+k[1:]); got != inos[k] {
					t.Fatalf("%s: inode %d after rename, want %d", k, got, inos[k])
				}
			}
			// Into a subdirectory, and back over the old name.
			Must(t, e.FS().Mkdir("sub", 0o755))
			Must(t, e.FS().Rename("n", "sub/n"))
			WantContent(t, e.FS(), "sub/n/e/y", "y")
			Must(t, e.FS().Rename("sub/n/e", "d"))
			WantNames(t, e.FS(), "d", "y", "z")
			WantNames(t, e.FS(), "sub/n", "new")
			e.Reopen()
			WantContent(t, e.FS(), "d/z", "z in draft")
			if got := InoOf(t, e.FS(), "d/y"); got != inos["d/e/y"] {
				t.Fatalf("inode after reopen %d, want %d", got, inos["d/e/y"])
			}
			// A directory made where the renamed one was is new and empty.
			Must(t, e.FS().Mkdir("n", 0o755))
			WantNames(t, e.FS(), "n")
		},
	},
	{
		Name: "RENAME_NOREPLACE and RENAME_EXCHANGE",
		Tree: map[string]string{"a": "A", "b": "B", "d/x": "x"},
		Run: func(t *testing.T, e Env) {
			WantErrno(t, "noreplace over a file", e.FS().Rename2("a", "b", overlay.RenameNoReplace), syscall.EEXIST)
			WantContent(t, e.FS(), "b", "B")
			Must(t, e.FS().Rename2("a", "c", overlay.RenameNoReplace))
			WantContent(t, e.FS(), "c", "A")
			ia, id := InoOf(t, e.FS(), "c"), InoOf(t, e.FS(), "d")
			Must(t, e.FS().Rename2("c", "d", overlay.RenameExchange))
			WantContent(t, e.FS(), "d", "A")
			WantContent(t, e.FS(), "c/x", "x")
			if InoOf(t, e.FS(), "d") != ia || InoOf(t, e.FS(), "c") != id {
				t.Fatal("exchange did not swap the inode numbers")
			}
			WantErrno(t, "exchange with a missing name", e.FS().Rename2("b", "nope", overlay.RenameExchange), syscall.ENOENT)
			WantErrno(t, "exchange with a descendant", e.FS().Rename2("c", "c/x", overlay.RenameExchange), syscall.EINVAL)
			Must(t, e.FS().Rename2("b", "d", overlay.RenameExchange))
			WantContent(t, e.FS(), "b", "A")
			WantContent(t, e.FS(), "d", "B")
		},
	},
	{
		Name: "opaque directories",
		Tree: map[string]string{"d/x": "x", "d/sub/y": "y"},
		Run: func(t *testing.T, e Env) {
			WantErrno(t, "rmdir a non-empty directory", e.FS().Remove("d"), syscall.ENOTEMPTY)
			Must(t, e.FS().RemoveAll("d"))
			WantMissing(t, e.FS(), "d")
			Must(t, e.FS().Mkdir("d", 0o755))
			WantNames(t, e.FS(), "d")
			WantMissing(t, e.FS(), "d/x")
			Must(t, e.FS().MkdirAll("d/sub", 0o755))
			WantNames(t, e.FS(), "d/sub")
			WantMissing(t, e.FS(), "d/sub/y")
			e.Reopen()
			WantNames(t, e.FS(), "d", "sub")
			WantNames(t, e.FS(), "d/sub")
		},
	},
	{
		Name: "Resolve refuses escapes",
		Tree: map[string]string{
			"dir/file": "f", "in": "->dir/file", "up": "->../outside", "etc": "->/etc",
			"dirlink": "->dir", "dir/back": "->../in",
		},
		Run: func(t *testing.T, e Env) {
			r := need[Resolver](t, e, "this view leaves resolving paths to the kernel")
			Must(t, e.FS().Symlink(e.Root()+"/dir", "absin"))
			Must(t, e.FS().Symlink("../../..", "dir/climb"))
			for _, c := range []struct{ in, want string }{
				{"dir/file", "dir/file"},
				{e.Root() + "/dir/file", "dir/file"},
				{"./dir/../dir/file", "dir/file"},
				{"in", "dir/file"},
				{"dirlink/file", "dir/file"},
				{"dir/back", "dir/file"},
				{"absin/file", "dir/file"},
				{e.Root() + "/dirlink/new", "dir/new"},
				{"missing/x", "missing/x"},
				{".", ""},
				{e.Root(), ""},
			} {
				got, err := r.Resolve(c.in)
				if err != nil || got != c.want {
					t.Errorf("Resolve(%q) = %q, %v; want %q", c.in, got, err, c.want)
				}
			}
			for _, p := range []string{
				"../x", "dir/../../x", "/etc/passwd", e.Root() + "x/y", "", "a\x00b",
				"up", "etc", "etc/passwd", "dir/climb", "dir/climb/etc",
			} {
				if got, err := r.Resolve(p); !errors.Is(err, overlay.ErrOutside) {
					t.Errorf("Resolve(%q) = %q, %v; want ErrOutside", p, got, err)
				}
			}
		},
	},
	{
		Name: "chmod",
		Tree: map[string]string{"f": "f", "d/x": "x", "l": "->f"},
		Run: func(t *testing.T, e Env) {
			Must(t, e.FS().Chmod("l", 0o600)) // follows the link
			fi, err := e.FS().Lstat("f")
			Must(t, err)
			if fi.Mode() != 0o600 {
				t.Fatalf("f after chmod through a link: %v", fi.Mode())
			}
			Must(t, e.FS().Chmod("d", 0o700))
			fi, err = e.FS().Lstat("d")
			Must(t, err)
			if fi.Mode() != fs.ModeDir|0o700 {
				t.Fatalf("d after chmod: %v", fi.Mode())
			}
			WantNames(t, e.FS(), "d", "x") // a directory's own metadata hides nothing
			WantErrno(t, "chmod a missing file", e.FS().Chmod("nope", 0o600), syscall.ENOENT)
		},
	},
	{
		Name: "mkdir and rmdir",
		Tree: map[string]string{"d/": "", "f": "f"},
		Run: func(t *testing.T, e Env) {
			WantErrno(t, "mkdir over a directory", e.FS().Mkdir("d", 0o755), syscall.EEXIST)
			WantErrno(t, "mkdir over a file", e.FS().Mkdir("f", 0o755), syscall.EEXIST)
			WantErrno(t, "mkdir in a missing directory", e.FS().Mkdir("x/y", 0o755), syscall.ENOENT)
			WantErrno(t, "mkdir below a file", e.FS().Mkdir("f/y", 0o755), syscall.ENOTDIR)
			WantErrno(t, "mkdirall below a file", e.FS().MkdirAll("f/y/z", 0o755), syscall.ENOTDIR)
			Must(t, e.FS().MkdirAll("a/b/c", 0o750))
			fi, err := e.FS().Lstat("a/b")
			Must(t, err)
			if fi.Mode() != fs.ModeDir|0o750 {
				t.Fatalf("mkdirall mode %v", fi.Mode())
			}
			WantErrno(t, "rmdir a file", e.FS().Rmdir("f"), syscall.ENOTDIR)
			WantErrno(t, "unlink a directory", e.FS().Unlink("d"), syscall.EISDIR)
			WantErrno(t, "rmdir a non-empty directory", e.FS().Rmdir("a"), syscall.ENOTEMPTY)
			WantErrno(t, "remove the root", e.FS().Remove(""), syscall.EBUSY)
			Must(t, e.FS().Rmdir("a/b/c"))
			Must(t, e.FS().Rmdir("d"))
			Must(t, e.FS().Unlink("f"))
			Must(t, e.FS().RemoveAll("a"))
			Must(t, e.FS().RemoveAll("a")) // gone already: no error
			WantNames(t, e.FS(), "")
		},
	},
}
