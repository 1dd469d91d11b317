//go:build linux

package overlay

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay/beneath"
)

// A commit writes each file to a temp file next to its path and renames
// it over the path once the content is durable. Syncing each temp file
// on its own cost a journal commit per file (most of a 10,000-file
// commit's time), so runs of writes are applied in batches: every temp
// file of the batch is written, one syncfs per file system they are on
// makes them durable together, and then they are renamed in order. The
// sync runs in the background while the next batch's temp files are
// written (it took a quarter of a commit's time when it did not). A
// crash anywhere is finished as before: the replay writes each temp file
// again (O_TRUNC) and renames it; a rollback removes the temp files left
// (see rollbackLocked).

// writeBatch is how many file writes share one sync (tests make it
// small, to have batches in flight).
var writeBatch = 1000

// A batch is ops [a, b) of a commit, their temp files written and being
// synced; synced says how that went.
type batch struct {
	a, b   int
	synced chan error
}

// writeBatch applies ops [a, b) of rec, writes and the directories they
// go in (made at once, in order), writing the temp files, and starts
// their sync. On an error it returns the op that failed, -1 for a test
// hook's (a crash: nothing is rolled back). Must be called with d.mu
// held.
func (d *Draft) writeBatch(rec *commitRecord, a, b int, p *parents) (*batch, int, error) {
	syncs := map[uint64]int{} // a descriptor on each file system written to
	closeAll := func() {
		for _, fd := range syncs {
			unix.Close(fd)
		}
	}
	for i := a; i < b; i++ {
		if testHookOp != nil {
			if err := testHookOp(i); err != nil {
				closeAll()
				return nil, -1, err
			}
		}
		op := &rec.Ops[i]
		var err error
		if op.Kind == opWrite {
			err = d.writeTemp(rec, op, p, syncs)
		} else {
			err = d.applyOp(rec, op)
		}
		if err != nil {
			closeAll()
			return nil, i, err
		}
	}
	bt := &batch{a: a, b: b, synced: make(chan error, 1)}
	go func() {
		var err error
		for _, fd := range syncs {
			if e := unix.Syncfs(fd); e != nil {
				err = &fs.PathError{Op: "syncfs", Path: d.w.root, Err: e}
				break
			}
		}
		// Closed before the commit hears of it: the commit is done
		// with no descriptor of its own left open.
		closeAll()
		bt.synced <- err
	}()
	return bt, 0, nil
}

// placeBatch waits for bt's sync and renames its temp files into place;
// temp files of ops up to last may exist. Must be called with d.mu held.
func (d *Draft) placeBatch(rec *commitRecord, bt *batch, last int, p *parents, progress func(int, int)) error {
	if err := <-bt.synced; err != nil {
		return d.failedLocked(rec, bt.a, last, err)
	}
	for i := bt.a; i < bt.b; i++ {
		if op := &rec.Ops[i]; op.Kind == opWrite {
			place := d.placeTemp
			if op.Link {
				place = d.placeLink
			}
			if err := place(rec, op, p); err != nil {
				return d.failedLocked(rec, i, last, err)
			}
		}
		if progress != nil {
			progress(i+1, len(rec.Ops))
		}
	}
	return nil
}

// parents keeps open the directory a batch last wrote in: ops come
// sorted by path, so the files of a directory are made and renamed in it
// by name, and its path is resolved beneath the workspace once, not
// three times for each file.
type parents struct {
	root *beneath.Root
	dir  *beneath.Dir
	// linkable says, once asked, whether data files may be linked into
	// dir (see linkableDir).
	linkable *bool
}

// of opens key's directory, made if missing, and returns it with key's
// last element.
func (p *parents) of(key string) (*beneath.Dir, string, error) {
	return p.at(key, true)
}

// at opens key's directory, made if missing when mkdir is set, and
// returns it with key's last element; no directory when it is missing.
func (p *parents) at(key string, mkdir bool) (*beneath.Dir, string, error) {
	if dk := parentOf(key); p.dir == nil || p.dir.Key() != dk {
		p.close()
		p.linkable = nil
		dir, err := p.root.OpenDir(dk)
		if errors.Is(err, fs.ErrNotExist) {
			if !mkdir {
				return nil, "", nil
			}
			if err = p.root.MkdirAll(dk, 0o755); err == nil {
				dir, err = p.root.OpenDir(dk)
			}
		}
		if err != nil {
			return nil, "", err
		}
		p.dir = dir
	}
	return p.dir, baseOf(key), nil
}

// remove removes the file key (a directory found there with all it
// holds); nothing there is no error.
func (p *parents) remove(key string) error {
	dir, name, err := p.at(key, false)
	if dir == nil {
		return err
	}
	err = dir.Remove(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, unix.EISDIR):
		return p.root.RemoveAll(key)
	}
	return err
}

func (p *parents) close() {
	if p.dir != nil {
		p.dir.Close()
		p.dir = nil
	}
}

// writeTemp writes an op's content to its temp file, given its owner
// (when set) and mode, and keeps its hash and stamp in op; the file is
// not synced: a descriptor on its file system is kept in syncs (by
// device) for the caller to sync.
func (d *Draft) writeTemp(rec *commitRecord, op *commitOp, p *parents, syncs map[uint64]int) error {
	if op.Link {
		err := d.prepareLink(rec, op, p, syncs)
		if err != errNoLink {
			return err
		}
		// Copied instead: kept for undo, and never through a temp
		// name a crash left linked to the data file.
		if err := d.keepForUndo(rec, op.Ino); err != nil {
			return err
		}
		op.Link = false
		if err := p.remove(tempName(rec, op.Path)); err != nil {
			return err
		}
	}
	src, err := d.opContent(rec, op)
	if err != nil {
		return err
	}
	defer src.Close()
	dir, name, err := p.of(op.Path)
	if err != nil {
		return err
	}
	tmp := tempBase(rec, name)
	perm := fs.FileMode(0o600)
	if op.Owner == nil {
		// Made with its mode (the umask may take bits, put back
		// below): its content is no secret to whom may read it once
		// renamed.
		perm = op.Mode & fs.ModePerm
	}
	f, err := dir.Open(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	h := sha256.New()
	_, err = copyPooled(io.MultiWriter(f, h), src)
	if err == nil {
		err = settleWritten(f, h, op, syncs)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		dir.Remove(tmp)
	}
	return err
}

// settleWritten gives f, the file a write op puts in place, the op's
// owner (when set) and mode, keeps a descriptor on its file system in
// syncs, and the content's hash (h has read all of it) and the file's
// stamp in op.
func settleWritten(f *os.File, h hash.Hash, op *commitOp, syncs map[uint64]int) error {
	if op.Owner != nil {
		// Chown first: it clears set-id bits.
		if err := f.Chown(op.Owner.Uid, op.Owner.Gid); err != nil {
			return err
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return &fs.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	if want := beneath.UnixMode(op.Mode) & 0o7777; st.Mode&0o7777 != want {
		if err := f.Chmod(op.Mode & permBits); err != nil {
			return err
		}
	}
	if err := keepDev(f, st.Dev, syncs); err != nil {
		return err
	}
	op.Hash = hex.EncodeToString(h.Sum(nil))
	op.Stat = &fileStamp{Dev: st.Dev, Ino: st.Ino, Size: st.Size, Mtime: st.Mtim.Nano()}
	return nil
}

// opContent opens what a write op writes: a blob, or the data file of
// the draft's inode.
func (d *Draft) opContent(rec *commitRecord, op *commitOp) (*os.File, error) {
	if op.Blob != "" {
		return os.Open(d.blobPath(op.Blob))
	}
	return d.openData(rec.Inode[op.Ino].dataName(op.Ino), os.O_RDONLY, 0)
}

// placeTemp renames an op's temp file over its path and gives it the
// op's extended attributes.
func (d *Draft) placeTemp(rec *commitRecord, op *commitOp, p *parents) error {
	dir, name, err := p.of(op.Path)
	if err != nil {
		return err
	}
	tmp := tempBase(rec, name)
	err = dir.Rename(tmp, name)
	if errors.Is(err, unix.EISDIR) {
		// A directory where the draft has a file (its backup was
		// taken when the commit was prepared).
		if err = d.w.dir.RemoveAll(op.Path); err == nil {
			err = dir.Rename(tmp, name)
		}
	}
	if err != nil {
		dir.Remove(tmp)
		return err
	}
	return d.setXattrs(op)
}

// setXattrs gives the file a write op placed its extended attributes.
func (d *Draft) setXattrs(op *commitOp) error {
	for k, v := range op.Xattr {
		if err := d.w.dir.Setxattr(op.Path, k, v); err != nil {
			return fmt.Errorf("set %s: %w", k, err)
		}
	}
	return nil
}

// writeDisk writes content to key atomically where the disk layer is
// not the OS's: a temp file in the same directory, synced, given its
// owner (when set) and mode, renamed over. Returns its hash.
func (d *Draft) writeDisk(rec *commitRecord, key string, mode fs.FileMode, owner *Owner, src io.Reader) (string, error) {
	disk := d.w.disk
	if err := disk.MkdirAll(diskName(parentOf(key)), 0o755); err != nil {
		return "", err
	}
	if ok, fi := d.diskHas(key); ok && fi.IsDir() {
		if err := disk.RemoveAll(diskName(key)); err != nil {
			return "", err
		}
	}
	tmp := tempName(rec, key)
	f, err := disk.OpenFile(diskName(tmp), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, err = copyPooled(io.MultiWriter(f, h), src)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = chown(disk, tmp, owner)
	}
	if err == nil {
		err = disk.Chmod(diskName(tmp), mode&permBits)
	}
	if err == nil {
		err = disk.Rename(diskName(tmp), diskName(key))
	}
	if err != nil {
		disk.Remove(diskName(tmp))
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// copyBufs lends copy buffers. io.Copy from an *os.File to a writer
// that is no file makes a new 32 KiB buffer for each call (the File's
// WriteTo falls back to it): most of what a commit or undo allocates
// per file, garbage that a daemon near its memory limit pays for with
// collections.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyPooled is io.Copy through a buffer of copyBufs.
func copyPooled(dst io.Writer, src io.Reader) (int64, error) {
	b := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(b)
	// Read only: a WriterTo (the *os.File's) would make its own buffer.
	return io.CopyBuffer(dst, struct{ io.Reader }{src}, *b)
}

// keepFS adds a descriptor on f's file system to syncs, unless one is
// there.
func keepFS(f any, syncs map[uint64]int) error {
	osf, ok := f.(interface{ Fd() uintptr })
	if !ok {
		return fmt.Errorf("no descriptor to sync")
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(osf.Fd()), &st); err != nil {
		return err
	}
	return keepDev(osf, st.Dev, syncs)
}

// keepDev adds a descriptor on f, of device dev, to syncs, unless one of
// that device is there.
func keepDev(f interface{ Fd() uintptr }, dev uint64, syncs map[uint64]int) error {
	if _, ok := syncs[dev]; ok {
		return nil
	}
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		return err
	}
	syncs[dev] = fd
	return nil
}
