//go:build linux

package overlay_test

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay"
	"github.com/draftfs/draftfs/overlay/vfstest"
)

func (m *model) opOpen(o vfstest.Op) {
	p, flag := o.P, o.Flag
	follow := flag&(os.O_CREATE|os.O_EXCL) != os.O_CREATE|os.O_EXCL
	if _, ok := m.plain(p, follow); !ok {
		return
	}
	if follow && m.fifo(p) {
		return
	}
	perm := o.Mode
	if flag != os.O_RDONLY {
		m.touch(p)
	}
	vf, verr := m.env.v.OpenFile(p, flag, perm)
	rf, rerr := os.OpenFile(m.r(p), flag, perm)
	if !m.same(fmt.Sprintf("open %s %s %v", p, flagString(flag), perm), verr, rerr) {
		if verr == nil {
			vf.Close()
		}
		if rerr == nil {
			rf.Close()
		}
		return
	}
	fi, _ := rf.Stat()
	m.opened++
	m.logf("handle #%d is %s", m.opened, p)
	m.handles = append(m.handles, &handlePair{key: p, path: fmt.Sprintf("#%d %s", m.opened, p), flag: flag, view: vf, ref: rf, isDir: fi.IsDir()})
	if len(m.handles) > 4 {
		m.closeHandle(m.handles[0])
		m.handles = m.handles[1:]
	}
}

func (m *model) closeHandle(h *handlePair) {
	verr, rerr := h.view.Close(), h.ref.Close()
	m.same("close "+h.path, verr, rerr)
}

func (m *model) opHandle(o vfstest.Op) {
	if len(m.handles) == 0 {
		m.opOpen(o)
		return
	}
	i := m.rng.IntN(len(m.handles))
	h := m.handles[i]
	switch m.rng.IntN(9) {
	case 0, 1: // write at an offset
		// Not empty: os.File.WriteAt of nothing succeeds without asking
		// the kernel, even on a read-only descriptor.
		b, off := append(o.Data, 'z'), o.Offset
		vn, verr := h.view.WriteAt(b, off)
		rn, rerr := h.ref.WriteAt(b, off)
		if m.same(fmt.Sprintf("writeat %s %d %q", h.path, off, b), verr, rerr) && vn != rn {
			m.fail("writeat %s: view wrote %d, reference %d", h.path, vn, rn)
		}
	case 2, 3: // write at the handle's offset (the end, with O_APPEND)
		b := o.Data
		vn, verr := h.view.Write(b)
		rn, rerr := h.ref.Write(b)
		if m.same(fmt.Sprintf("write %s %q", h.path, b), verr, rerr) && vn != rn {
			m.fail("write %s: view wrote %d, reference %d", h.path, vn, rn)
		}
	case 4: // read at an offset
		off, n := int64(m.rng.IntN(40)), 1+m.rng.IntN(40)
		vb, rb := make([]byte, n), make([]byte, n)
		vn, verr := h.view.ReadAt(vb, off)
		rn, rerr := h.ref.ReadAt(rb, off)
		m.same(fmt.Sprintf("readat %s %d %d", h.path, off, n), verr, rerr)
		if vn != rn || !bytes.Equal(vb[:vn], rb[:rn]) || (verr == io.EOF) != (rerr == io.EOF) {
			m.fail("readat %s %d: view %q %v, reference %q %v", h.path, off, vb[:vn], verr, rb[:rn], rerr)
		}
	case 5: // read at the handle's offset
		n := 1 + m.rng.IntN(40)
		vb, rb := make([]byte, n), make([]byte, n)
		vn, verr := h.view.Read(vb)
		rn, rerr := h.ref.Read(rb)
		m.same(fmt.Sprintf("read %s %d", h.path, n), verr, rerr)
		if vn != rn || !bytes.Equal(vb[:vn], rb[:rn]) || (verr == io.EOF) != (rerr == io.EOF) {
			m.fail("read %s: view %q %v, reference %q %v", h.path, vb[:vn], verr, rb[:rn], rerr)
		}
	case 6: // seek
		off, whence := int64(m.rng.IntN(20)), m.rng.IntN(3)
		if h.isDir {
			off, whence = 0, io.SeekStart
		}
		vo, verr := h.view.Seek(off, whence)
		ro, rerr := h.ref.Seek(off, whence)
		if m.same(fmt.Sprintf("seek %s %d %d", h.path, off, whence), verr, rerr) && vo != ro {
			m.fail("seek %s: view at %d, reference at %d", h.path, vo, ro)
		}
	case 7: // truncate
		size := int64(m.rng.IntN(30))
		verr, rerr := h.view.Truncate(size), h.ref.Truncate(size)
		m.same(fmt.Sprintf("ftruncate %s %d", h.path, size), verr, rerr)
	case 8: // stat, or close
		if m.rng.IntN(2) == 0 {
			m.closeHandle(h)
			m.handles = slices.Delete(m.handles, i, i+1)
			return
		}
		vfi, verr := h.view.Stat()
		rfi, rerr := h.ref.Stat()
		if m.same("fstat "+h.path, verr, rerr) {
			m.compareInfo("fstat "+h.path, vfi, rfi, true)
		}
	}
}

func (m *model) opWriteFile(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, true); !ok || m.fifo(p) {
		return
	}
	m.touch(p)
	b := o.Data
	flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if m.rng.IntN(3) == 0 {
		flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	write := func(f afero.File, err error) error {
		if err != nil {
			return err
		}
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	// The ctime is not compared: opening a lower file for writing makes
	// the draft's copy, a new file, even when nothing is written.
	verr := write(m.env.v.OpenFile(p, flag, 0o644))
	rf, rerr := os.OpenFile(m.r(p), flag, 0o644)
	if rerr == nil {
		rerr = write(rf, nil)
	}
	m.same(fmt.Sprintf("writefile %s %s %q", p, flagString(flag), b), verr, rerr)
}

func (m *model) opReadFile(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, true); !ok || m.fifo(p) {
		return
	}
	vb, verr := readAll(m.env.v, p)
	rb, rerr := os.ReadFile(m.r(p))
	if m.same("readfile "+p, verr, rerr) && !bytes.Equal(vb, rb) {
		m.fail("readfile %s: view %q, reference %q", p, vb, rb)
	}
}

func (m *model) opStat(o vfstest.Op) {
	p := o.P
	follow := m.rng.IntN(2) == 0
	if _, ok := m.plain(p, follow); !ok {
		return
	}
	var vfi, rfi fs.FileInfo
	var verr, rerr error
	if follow {
		vfi, verr = m.env.v.Stat(p)
		rfi, rerr = os.Stat(m.r(p))
	} else {
		vfi, verr = m.env.v.Lstat(p)
		rfi, rerr = os.Lstat(m.r(p))
	}
	op := fmt.Sprintf("stat(follow=%v) %s", follow, p)
	if m.same(op, verr, rerr) {
		m.compareInfo(op, vfi, rfi, true)
		m.compareDirLinks(op, vfi, rfi)
	}
}

// compareDirLinks compares a directory's link count: 2 and one per
// subdirectory, on the reference's file system as on the disk's.
func (m *model) compareDirLinks(op string, vfi, rfi fs.FileInfo) {
	m.t.Helper()
	if !rfi.IsDir() {
		return
	}
	va, ok := vfi.Sys().(*overlay.Attr)
	if !ok {
		m.fail("%s: Sys() is %T", op, vfi.Sys())
		return
	}
	if rn := rfi.Sys().(*syscall.Stat_t).Nlink; uint64(va.Nlink) != rn {
		m.fail("%s: view directory nlink %d, reference %d", op, va.Nlink, rn)
	}
}

// compareInfo compares type, permissions, size (not of directories) and
// the link count of files.
func (m *model) compareInfo(op string, vfi, rfi fs.FileInfo, names bool) {
	m.t.Helper()
	if vfi.Mode() != rfi.Mode() {
		m.fail("%s: view mode %v, reference %v", op, vfi.Mode(), rfi.Mode())
	}
	if !rfi.IsDir() && vfi.Size() != rfi.Size() {
		m.fail("%s: view size %d, reference %d", op, vfi.Size(), rfi.Size())
	}
	if names && vfi.Name() != rfi.Name() {
		m.fail("%s: view name %q, reference %q", op, vfi.Name(), rfi.Name())
	}
	if rfi.Mode().IsRegular() {
		va, ok := vfi.Sys().(*overlay.Attr)
		if !ok {
			m.fail("%s: Sys() is %T", op, vfi.Sys())
			return
		}
		if rn := rfi.Sys().(*syscall.Stat_t).Nlink; uint64(va.Nlink) != rn && !m.diskLinked(va) {
			m.fail("%s: view nlink %d, reference %d", op, va.Nlink, rn)
		}
	}
}

// diskLinked reports whether the view's object is one the disk holds
// under several names (a commit made them): the view shows the disk's
// link count, also where the draft removed one of the names, as kernel
// overlayfs does.
func (m *model) diskLinked(va *overlay.Attr) bool {
	linked := false
	filepath.WalkDir(m.env.root, func(p string, de fs.DirEntry, err error) error {
		var st unix.Stat_t
		if err == nil && de.Type().IsRegular() && unix.Lstat(p, &st) == nil && st.Ino == va.Ino && st.Nlink > 1 {
			linked = true
		}
		return nil
	})
	return linked
}

func (m *model) opReadDir(o vfstest.Op) {
	p := o.P
	if m.rng.IntN(4) == 0 {
		p = ""
	}
	if _, ok := m.plain(p, true); !ok {
		return
	}
	vents, verr := m.env.v.ReadDir(p)
	rents, rerr := os.ReadDir(m.r(p))
	if !m.same("readdir "+p, verr, rerr) {
		return
	}
	if got, want := dirString(vents), dirString(rents); got != want {
		m.fail("readdir %s: view %s, reference %s", p, got, want)
	}
}

func dirString(ents []fs.DirEntry) string {
	var b strings.Builder
	for _, e := range ents {
		fmt.Fprintf(&b, "%s:%v ", e.Name(), e.Type())
	}
	return b.String()
}

func (m *model) opChmod(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, true); !ok {
		return
	}
	m.touch(p)
	perm := m.randPerm(m.rng.IntN(2) == 0)
	m.ctimeMoves(func() bool {
		return m.same(fmt.Sprintf("chmod %s %v", p, perm), m.env.v.Chmod(p, perm), os.Chmod(m.r(p), perm))
	}, [2]string{p, p})
}

func (m *model) opChtimes(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, true); !ok {
		return
	}
	m.touch(p)
	at := time.Unix(int64(m.rng.IntN(1<<30)), int64(m.rng.IntN(1e9)))
	mt := time.Unix(int64(m.rng.IntN(1<<30)), int64(m.rng.IntN(1e9)))
	if !m.ctimeMoves(func() bool {
		return m.same("chtimes "+p, m.env.v.Chtimes(p, at, mt), os.Chtimes(m.r(p), at, mt))
	}, [2]string{p, p}) {
		return
	}
	vfi, verr := m.env.v.Stat(p)
	rfi, rerr := os.Stat(m.r(p))
	if m.same("stat after chtimes "+p, verr, rerr) && !vfi.ModTime().Equal(rfi.ModTime()) {
		m.fail("chtimes %s: view mtime %v, reference %v", p, vfi.ModTime(), rfi.ModTime())
	}
}

func (m *model) opTruncate(o vfstest.Op) {
	p := o.P
	if _, ok := m.plain(p, true); !ok {
		return
	}
	m.touch(p)
	size := o.Offset
	m.ctimeMoves(func() bool {
		return m.same(fmt.Sprintf("truncate %s %d", p, size), m.env.v.Truncate(p, size), os.Truncate(m.r(p), size))
	}, [2]string{p, p})
}
