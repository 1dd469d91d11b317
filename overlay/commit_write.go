//go:build linux

package overlay

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// A commit writes each file to a temp file next to its path and renames
// it over the path once the content is durable. Syncing each temp file
// on its own cost a journal commit per file (most of a 10,000-file
// commit's time), so runs of writes are applied in batches: every temp
// file of the batch is written, one syncfs per file system they are on
// makes them durable together, and then they are renamed in order. A
// crash anywhere in a batch is finished as before: the replay writes
// each temp file again (O_TRUNC) and renames it; a rollback removes the
// temp files the batch left (see rollbackLocked).

// writeBatch is how many file writes share one sync.
const writeBatch = 1000

// writeOps applies the ops [a, b) of rec, writes and the directories
// they go in (made at once, in order), as above. Must be called with
// d.mu held.
func (d *Draft) writeOps(rec *commitRecord, a, b int, progress func(int, int)) error {
	syncs := map[uint64]int{} // a descriptor on each file system written to
	defer func() {
		for _, fd := range syncs {
			unix.Close(fd)
		}
	}()
	for i := a; i < b; i++ {
		if testHookOp != nil {
			if err := testHookOp(i); err != nil {
				return err
			}
		}
		op := &rec.Ops[i]
		if op.Kind != opWrite {
			if err := d.applyOp(rec, op); err != nil {
				return d.failedLocked(rec, i, i, err)
			}
			continue
		}
		if err := d.writeTemp(rec, op, syncs); err != nil {
			return d.failedLocked(rec, i, i, err)
		}
	}
	for _, fd := range syncs {
		if err := unix.Syncfs(fd); err != nil {
			return d.failedLocked(rec, a, b-1, &fs.PathError{Op: "syncfs", Path: d.w.root, Err: err})
		}
	}
	for i := a; i < b; i++ {
		if op := &rec.Ops[i]; op.Kind == opWrite {
			if err := d.placeTemp(rec, op); err != nil {
				return d.failedLocked(rec, i, b-1, err)
			}
		}
		if progress != nil {
			progress(i+1, len(rec.Ops))
		}
	}
	return nil
}

// writeTemp writes an op's content to its temp file. With syncs nil
// the file is synced; else it is left to the caller to sync the file
// systems in syncs, to which the temp file's is added.
func (d *Draft) writeTemp(rec *commitRecord, op *commitOp, syncs map[uint64]int) error {
	var src io.ReadCloser
	var err error
	if op.Blob != "" {
		src, err = os.Open(d.blobPath(op.Blob))
	} else {
		src, err = os.Open(d.dataPath(rec.Inode[op.Ino].dataName(op.Ino)))
	}
	if err != nil {
		return err
	}
	defer src.Close()
	op.Hash, op.Stat, err = d.tempFile(rec, op.Path, op.Mode, op.Owner, src, syncs)
	return err
}

// placeTemp renames an op's temp file over its path and gives it the
// op's extended attributes.
func (d *Draft) placeTemp(rec *commitRecord, op *commitOp) error {
	tmp := tempName(rec, op.Path)
	if err := d.w.disk.Rename(diskName(tmp), diskName(op.Path)); err != nil {
		d.w.disk.Remove(diskName(tmp))
		return err
	}
	for k, v := range op.Xattr {
		if d.w.osDisk {
			if err := d.w.dir.Setxattr(op.Path, k, v); err != nil {
				return fmt.Errorf("set %s: %w", k, err)
			}
		}
	}
	return nil
}

// writeDisk writes content to key atomically: a temp file in the same
// directory, synced, given its owner (when set) and mode, renamed over.
// Returns its hash.
func (d *Draft) writeDisk(rec *commitRecord, key string, mode fs.FileMode, owner *Owner, src io.Reader) (string, error) {
	h, _, err := d.tempFile(rec, key, mode, owner, src, nil)
	if err != nil {
		return "", err
	}
	tmp := tempName(rec, key)
	if err := d.w.disk.Rename(diskName(tmp), diskName(key)); err != nil {
		d.w.disk.Remove(diskName(tmp))
		return "", err
	}
	return h, nil
}

// tempFile writes content to key's temp file, given its owner (when set)
// and mode, and returns its hash and, on an OS disk, its stamp. With
// syncs nil the file is synced, else a descriptor on its file system is
// kept in syncs (by device) for the caller to sync.
func (d *Draft) tempFile(rec *commitRecord, key string, mode fs.FileMode, owner *Owner, src io.Reader, syncs map[uint64]int) (string, *fileStamp, error) {
	disk := d.w.disk
	if err := disk.MkdirAll(diskName(parentOf(key)), 0o755); err != nil {
		return "", nil, err
	}
	if ok, fi := d.diskHas(key); ok && fi.IsDir() {
		if err := disk.RemoveAll(diskName(key)); err != nil {
			return "", nil, err
		}
	}
	tmp := tempName(rec, key)
	f, err := disk.OpenFile(diskName(tmp), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return "", nil, err
	}
	var stamp *fileStamp
	h := sha256.New()
	_, err = copyPooled(io.MultiWriter(f, h), src)
	osf, onOS := f.(*os.File)
	switch {
	case err != nil:
	case syncs == nil:
		err = f.Sync()
	default:
		err = keepFS(f, syncs)
	}
	if err == nil && onOS {
		// On the descriptor: no walk to the file for each (chown first,
		// it clears set-id bits).
		if owner != nil {
			err = osf.Chown(owner.Uid, owner.Gid)
		}
		if err == nil {
			err = osf.Chmod(mode & permBits)
		}
		if err == nil {
			stamp, err = stampFile(osf)
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && !onOS {
		err = chown(disk, tmp, owner)
		if err == nil {
			err = disk.Chmod(diskName(tmp), mode&permBits)
		}
	}
	if err != nil {
		disk.Remove(diskName(tmp))
		return "", nil, err
	}
	return hex.EncodeToString(h.Sum(nil)), stamp, nil
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
	if _, ok := syncs[st.Dev]; ok {
		return nil
	}
	fd, err := unix.Dup(int(osf.Fd()))
	if err != nil {
		return err
	}
	syncs[st.Dev] = fd
	return nil
}
