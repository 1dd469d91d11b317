//go:build linux

package overlay_test

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/vfstest"
)

func (m *model) opMkdir(o vfstest.Op) {
	p := o.P
	if m.rng.IntN(2) == 0 {
		p = m.randPath(3)
	}
	if _, ok := m.plain(p, false); !ok {
		return
	}
	m.touch(p)
	perm := m.randPerm(true)
	if m.rng.IntN(3) == 0 {
		for q := p; q != ""; q = parentOfKey(q) {
			m.touch(q)
		}
		verr := m.env.v.MkdirAll(p, perm)
		rerr := os.MkdirAll(m.r(p), perm)
		m.same(fmt.Sprintf("mkdirall %s %v", p, perm), verr, rerr)
		return
	}
	verr := m.env.v.Mkdir(p, perm)
	rerr := os.Mkdir(m.r(p), perm)
	m.same(fmt.Sprintf("mkdir %s %v", p, perm), verr, rerr)
}

func (m *model) opRemove(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, false); !ok {
		return
	}
	m.touch(p)
	var verr, rerr error
	var op string
	switch m.rng.IntN(3) {
	case 0:
		op, verr, rerr = "remove", m.env.v.Remove(p), os.Remove(m.r(p))
	case 1:
		op, verr, rerr = "unlink", m.env.v.Unlink(p), syscallErr("unlink", p, syscall.Unlink(m.r(p)))
	case 2:
		op, verr, rerr = "rmdir", m.env.v.Rmdir(p), syscallErr("rmdir", p, syscall.Rmdir(m.r(p)))
	}
	m.same(op+" "+p, verr, rerr)
}

func syscallErr(op, p string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: p, Err: err}
}

func (m *model) opRemoveAll(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, false); !ok || p == "" || m.specialParent(p) {
		return
	}
	m.touch(p)
	m.same("removeall "+p, m.env.v.RemoveAll(p), os.RemoveAll(m.r(p)))
}

func (m *model) opRename(o vfstest.Op) {
	a, b := o.P, o.Q
	switch m.rng.IntN(4) {
	case 0:
		b = m.randPath(3)
	case 1:
		b = a + "/" + modelNames[m.rng.IntN(len(modelNames))] // into itself
	}
	m.rename(a, b, 0)
}

func (m *model) opRename2(o vfstest.Op) {
	a, b := o.P, o.Q
	flags := overlay.RenameNoReplace
	if m.rng.IntN(2) == 0 {
		flags = overlay.RenameExchange
	}
	m.rename(a, b, flags)
}

func (m *model) rename(a, b string, flags overlay.RenameFlags) {
	if _, ok := m.plain(a, false); !ok {
		return
	}
	if _, ok := m.plain(b, false); !ok {
		return
	}
	m.touch(a, b)
	var rflags uint
	if flags&overlay.RenameNoReplace != 0 {
		rflags |= unix.RENAME_NOREPLACE
	}
	if flags&overlay.RenameExchange != 0 {
		rflags |= unix.RENAME_EXCHANGE
	}
	moved := [][2]string{{a, b}}
	if flags&overlay.RenameExchange != 0 {
		moved = append(moved, [2]string{b, a})
	}
	m.ctimeMoves(func() bool {
		verr := m.env.v.Rename2(a, b, flags)
		rerr := syscallErr("rename", a, unix.Renameat2(unix.AT_FDCWD, m.r(a), unix.AT_FDCWD, m.r(b), rflags))
		return m.same(fmt.Sprintf("rename %s %s flags %d", a, b, flags), verr, rerr)
	}, moved...)
}

func (m *model) opSymlink(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, false); !ok {
		return
	}
	m.touch(p)
	target := m.randPath(2)
	var vtarget, rtarget string
	switch m.rng.IntN(3) {
	case 0: // absolute, inside the tree
		vtarget, rtarget = m.env.root+"/"+target, m.ref+"/"+target
	case 1: // relative, climbing
		vtarget = strings.Repeat("../", strings.Count(p, "/")) + target
		rtarget = vtarget
	default:
		vtarget, rtarget = target, target
	}
	verr := m.env.v.Symlink(vtarget, p)
	rerr := os.Symlink(rtarget, m.r(p))
	m.same(fmt.Sprintf("symlink %s -> %s", p, vtarget), verr, rerr)
}

func (m *model) opReadlink(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, false); !ok {
		return
	}
	vt, verr := m.env.v.Readlink(p)
	rt, rerr := os.Readlink(m.r(p))
	if m.same("readlink "+p, verr, rerr) && m.viewTarget(rt) != vt {
		m.fail("readlink %s: view %q, reference %q", p, vt, rt)
	}
}

// viewTarget is the view's form of a reference symlink target.
func (m *model) viewTarget(t string) string {
	if rest, ok := strings.CutPrefix(t, m.ref+"/"); ok {
		return m.env.root + "/" + rest
	}
	return t
}

func (m *model) opLink(o vfstest.Op) {
	a, b := o.P, o.Q
	if m.rng.IntN(2) == 0 {
		b = m.randPath(3)
	}
	if _, ok := m.plain(a, false); !ok {
		return
	}
	if _, ok := m.plain(b, false); !ok {
		return
	}
	m.touch(a, b)
	m.ctimeMoves(func() bool {
		verr := m.env.v.Link(a, b)
		rerr := syscallErr("link", a, syscall.Link(m.r(a), m.r(b)))
		return m.same(fmt.Sprintf("link %s %s", a, b), verr, rerr)
	}, [2]string{a, a})
}
