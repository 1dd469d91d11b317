//go:build linux

package beneath

import (
	"io/fs"
	"syscall"
)

// specialBits pairs the set-id and sticky bits of both spellings.
var specialBits = [...]struct {
	m fs.FileMode
	u uint32
}{{fs.ModeSetuid, syscall.S_ISUID}, {fs.ModeSetgid, syscall.S_ISGID}, {fs.ModeSticky, syscall.S_ISVTX}}

// UnixMode is m as st_mode: type, permission, set-id and sticky bits (a
// mode without a type is a regular file's).
func UnixMode(m fs.FileMode) uint32 {
	mode := uint32(m.Perm())
	switch {
	case m.IsDir():
		mode |= syscall.S_IFDIR
	case m&fs.ModeSymlink != 0:
		mode |= syscall.S_IFLNK
	case m&fs.ModeNamedPipe != 0:
		mode |= syscall.S_IFIFO
	case m&fs.ModeSocket != 0:
		mode |= syscall.S_IFSOCK
	case m&fs.ModeCharDevice != 0:
		mode |= syscall.S_IFCHR
	case m&fs.ModeDevice != 0:
		mode |= syscall.S_IFBLK
	default:
		mode |= syscall.S_IFREG
	}
	for _, b := range specialBits {
		if m&b.m != 0 {
			mode |= b.u
		}
	}
	return mode
}

// FileMode is st_mode as an fs.FileMode, as os.Lstat converts it (no
// type bits: no type).
func FileMode(mode uint32) fs.FileMode {
	m := fs.FileMode(mode & 0o777)
	switch mode & syscall.S_IFMT {
	case syscall.S_IFBLK:
		m |= fs.ModeDevice
	case syscall.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		m |= fs.ModeDir
	case syscall.S_IFIFO:
		m |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		m |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		m |= fs.ModeSocket
	}
	for _, b := range specialBits {
		if mode&b.u != 0 {
			m |= b.m
		}
	}
	return m
}
