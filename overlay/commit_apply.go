//go:build linux

package overlay

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/spf13/afero"
	"golang.org/x/sys/unix"

	"github.com/draftfs/draftfs/overlay/beneath"
)

// applyOps applies rec's ops in order, from where a crash left them; an
// op that fails rolls the commit back. It reads nothing of the draft's
// maps (see shareableLocked). On the OS's disk, runs of writes go in
// batches, each renamed into place while the next is written.
func (d *Draft) applyOps(rec *commitRecord, progress func(int, int)) error {
	var pending *batch // written, being synced
	written, placed := &parents{root: d.w.dir}, &parents{root: d.w.dir}
	defer written.close()
	defer placed.close()
	place := func(last int) error {
		if pending == nil {
			return nil
		}
		bt := pending
		pending = nil
		return d.placeBatch(rec, bt, last, placed, progress)
	}
	for i := 0; i < len(rec.Ops); i++ {
		op := &rec.Ops[i]
		if op.Kind != opStage && rec.State == stateStaging {
			rec.State = statePlacing
			if err := d.st.write(&txn{commits: map[uint64]*commitRecord{rec.ID: rec}}); err != nil {
				return err
			}
		}
		if op.Kind == opStage && rec.State != stateStaging {
			continue
		}
		if op.Kind == opWrite && d.w.osDisk {
			j := i + 1
			for j < len(rec.Ops) && j-i < writeBatch && (rec.Ops[j].Kind == opWrite || rec.Ops[j].Kind == opMkdir) {
				j++
			}
			bt, failed, err := d.writeBatch(rec, i, j, written)
			if err == nil {
				if err = place(j - 1); err != nil {
					<-bt.synced
					return err
				}
				pending = bt
				i = j - 1
				continue
			}
			if pending != nil {
				<-pending.synced
			}
			if failed < 0 {
				return err
			}
			return d.failedLocked(rec, failed, failed, err)
		}
		if err := place(i - 1); err != nil {
			return err
		}
		if testHookOp != nil {
			if err := testHookOp(i); err != nil {
				return err
			}
		}
		if err := d.applyOp(rec, op); err != nil {
			return d.failedLocked(rec, i, i, err)
		}
		if progress != nil {
			progress(i+1, len(rec.Ops))
		}
	}
	return place(len(rec.Ops) - 1)
}

// applyOp performs one op; each can be run again after a crash.
func (d *Draft) applyOp(rec *commitRecord, op *commitOp) error {
	disk := d.w.disk
	switch op.Kind {
	case opStage:
		if ok, _ := d.diskHas(op.From); !ok {
			return nil // moved before a crash
		}
		if err := disk.MkdirAll(diskName(rec.Stage), 0o700); err != nil {
			return err
		}
		return disk.Rename(diskName(op.From), diskName(op.Stage))
	case opPlace:
		if ok, _ := d.diskHas(op.Stage); !ok {
			return nil
		}
		if err := d.clear(op.Path); err != nil {
			return err
		}
		if err := disk.MkdirAll(diskName(parentOf(op.Path)), 0o755); err != nil {
			return err
		}
		if err := disk.Rename(diskName(op.Stage), diskName(op.Path)); err != nil {
			return err
		}
		if op.Mode.IsDir() {
			return disk.Chmod(diskName(op.Path), op.Mode)
		}
		return nil
	case opRemove:
		return disk.RemoveAll(diskName(op.Path))
	case opMkdir:
		if ok, fi := d.diskHas(op.Path); ok && !fi.IsDir() {
			if err := d.clear(op.Path); err != nil {
				return err
			}
		} else if ok && op.Backup != "" {
			// Opaque: what the directory held is gone in the draft.
			if err := disk.RemoveAll(diskName(op.Path)); err != nil {
				return err
			}
		}
		if err := disk.MkdirAll(diskName(op.Path), 0o755); err != nil {
			return err
		}
		if err := chown(disk, op.Path, op.Owner); err != nil {
			return err
		}
		return disk.Chmod(diskName(op.Path), op.Mode)
	case opChmod:
		if err := chown(disk, op.Path, op.Owner); err != nil {
			return err
		}
		return disk.Chmod(diskName(op.Path), op.Mode)
	case opWrite:
		// On the OS's disk, writes go in batches (writeOps).
		src, err := d.opContent(rec, op)
		if err != nil {
			return err
		}
		defer src.Close()
		op.Hash, err = d.writeDisk(rec, op.Path, op.Mode, op.Owner, src)
		return err
	case opLink:
		return d.linkDisk(rec, op)
	case opSymlink:
		op.Hash = hashBytes([]byte(op.Target))
		return d.symlinkDisk(rec, op.Path, op.Target, op.Owner)
	case opMknod:
		return d.mknodDisk(rec, op)
	}
	return fmt.Errorf("unknown op %q", op.Kind)
}

// clear removes what is at key on disk when it is in the way of a
// rename or a file (its backup was taken when the commit was prepared).
func (d *Draft) clear(key string) error {
	if ok, _ := d.diskHas(key); !ok {
		return nil
	}
	return d.w.disk.RemoveAll(diskName(key))
}

// clearDir removes the directory at key on disk, if there is one: a
// file renamed over it replaces it (its backup was taken when the
// commit was prepared).
func (d *Draft) clearDir(key string) error {
	if ok, fi := d.diskHas(key); ok && fi.IsDir() {
		return d.w.disk.RemoveAll(diskName(key))
	}
	return nil
}

// tempName is a hidden name next to key for an atomic replace.
func tempName(rec *commitRecord, key string) string {
	return join(parentOf(key), tempBase(rec, baseOf(key)))
}

// tempBase is tempName's last element, for a file named name.
func tempBase(rec *commitRecord, name string) string {
	return fmt.Sprintf(".%s.draftfs-%d", name, rec.ID)
}

// chown gives what is at key (a symlink itself) its owner, when one is
// set. Before any chmod: a chown clears set-id bits.
func chown(disk afero.Fs, key string, o *Owner) error {
	if o == nil {
		return nil
	}
	return disk.Chown(diskName(key), o.Uid, o.Gid)
}

// linkDisk makes op.Path a hard link of op.From, atomically; where the
// disk layer cannot link, a copy.
func (d *Draft) linkDisk(rec *commitRecord, op *commitOp) error {
	special := op.Mode.Type()&specialTypes != 0
	if special && !d.w.osDisk {
		return fmt.Errorf("the disk layer cannot link special files")
	}
	if d.w.osDisk {
		tmp := tempName(rec, op.Path)
		d.w.dir.Remove(tmp)
		if err := d.w.dir.Link(op.From, tmp); err != nil {
			return err
		}
		err := d.clearDir(op.Path)
		if err == nil {
			err = d.w.dir.Rename(tmp, op.Path)
		}
		if err != nil {
			d.w.dir.Remove(tmp)
			return err
		}
		if special {
			return nil // a FIFO or device node: never opened
		}
		b, err := afero.ReadFile(d.w.disk, diskName(op.Path))
		op.Hash = hashBytes(b)
		return err
	}
	f, err := d.w.disk.Open(diskName(op.From))
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	op.Hash, err = d.writeDisk(rec, op.Path, fi.Mode(), nil, f)
	return err
}

// symlinkDisk makes key a symlink, atomically.
func (d *Draft) symlinkDisk(rec *commitRecord, key, target string, owner *Owner) error {
	l, ok := d.w.disk.(afero.Linker)
	if !ok {
		return fmt.Errorf("the disk layer cannot make symlinks")
	}
	tmp := tempName(rec, key)
	d.w.disk.Remove(diskName(tmp))
	if err := l.SymlinkIfPossible(target, diskName(tmp)); err != nil {
		return err
	}
	if err := chown(d.w.disk, tmp, owner); err != nil {
		return err
	}
	if err := d.clearDir(key); err != nil {
		return err
	}
	return d.w.disk.Rename(diskName(tmp), diskName(key))
}

// mknodDisk makes op.Path a FIFO or device node, atomically.
func (d *Draft) mknodDisk(rec *commitRecord, op *commitOp) error {
	tmp := tempName(rec, op.Path)
	d.w.disk.Remove(diskName(tmp))
	if err := mknodOn(d.w.disk, diskName(tmp), op.Mode, op.Rdev); err != nil {
		return err
	}
	if err := chown(d.w.disk, tmp, op.Owner); err != nil {
		return err
	}
	if err := d.clearDir(op.Path); err != nil {
		return err
	}
	return d.w.disk.Rename(diskName(tmp), diskName(op.Path))
}

// mknodOn makes a FIFO or device node, with exactly mode's permission
// bits, on the disk layer or the OS's file system (the state
// directory's).
func mknodOn(fsys afero.Fs, name string, mode fs.FileMode, rdev uint64) error {
	switch v := fsys.(type) {
	case beneath.FS:
		return v.R.Mknod(beneath.Key(name), mode, rdev)
	case *afero.OsFs:
		if err := unix.Mknod(name, beneath.UnixMode(mode)&unix.S_IFMT|0o600, int(rdev)); err != nil {
			return &fs.PathError{Op: "mknod", Path: name, Err: err}
		}
		return os.Chmod(name, mode&permBits)
	}
	return fmt.Errorf("%s: the disk layer cannot make special files", name)
}

// syncDirs makes the renames of a commit (or of its revert) durable:
// the file system of every directory it touched is synced once (syncfs;
// a directory's own fsync where there is no descriptor), not each
// directory: 100 new directories cost 100 journal commits.
func (d *Draft) syncDirs(rec *commitRecord) {
	seen := map[string]bool{}
	syncs := map[uint64]int{}
	for _, op := range rec.Ops {
		for _, k := range []string{op.Path, op.From} {
			if k == "" {
				continue
			}
			p := parentOf(k)
			if seen[p] {
				continue
			}
			seen[p] = true
			// Not blocking on a FIFO put there since (an undo puts
			// back what a directory replaced).
			if f, err := d.w.disk.OpenFile(diskName(p), os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0); err == nil {
				if keepFS(f, syncs) != nil {
					f.Sync()
				}
				f.Close()
			}
		}
	}
	for _, fd := range syncs {
		unix.Syncfs(fd)
		unix.Close(fd)
	}
}
