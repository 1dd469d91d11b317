//go:build linux

package overlay

import (
	"errors"
	"io/fs"
	"syscall"
)

// Special files (FIFOs, Unix sockets, device nodes) are draft objects
// that are all metadata: an inode with their type, permission bits and
// device number, and no data file. They list, stat, rename, link,
// chmod, whiteout and commit as any object; their I/O is the kernel's
// (a FIFO's pipe, a socket's listener, a device's driver), so the view
// does not open them: a mount's kernel serves them itself.

// Mknod makes name a FIFO, a Unix socket, a character or block device
// (mode's type bits, dev the device number) or, with no type bits, an
// empty regular file, as mknod(2) does. Device nodes need privilege
// only when they are committed to disk; the mount leaves that check to
// the kernel, which refuses callers without CAP_MKNOD.
func (f *Fs) Mknod(name string, mode fs.FileMode, dev uint64) error {
	key := clean(name)
	k := kindOf(mode)
	switch {
	case k == kindSpecial && mode&fs.ModeCharDevice != 0 && mode&fs.ModeDevice == 0:
		return pathErr("mknod", key, syscall.EINVAL) // not a type
	case k == kindSpecial, k == kindFile && mode.Type() == 0:
	default:
		return pathErr("mknod", key, syscall.EINVAL)
	}
	d := f.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.lstatLocked(key); err == nil {
		return pathErr("mknod", key, syscall.EEXIST)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if k == kindSpecial && mode&(fs.ModeDevice) == 0 {
		dev = 0 // FIFOs and sockets have no device
	}
	_, _, err := d.createLocked(key, k, mode, "", dev, noHandle, f.src)
	return err
}
