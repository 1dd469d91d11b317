//go:build linux

package overlay

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// Spare data files: the data file of a draft file that goes is emptied
// and kept in the draft's spare directory, and a new file takes one
// instead of creating its data file. Deleting thousands of files and
// making thousands (rm -rf, then an untar or an rsync, as agents do)
// then allocates and frees no inodes in the state directory. Creating a
// file is what this saves: ext4 without a journal skips every inode
// freed in the last minute (five while its table block is unwritten) in
// the group it allocates from, and every data file is allocated from the
// data directory's group, so after an rm -rf of 4,000 draft files each
// create scanned them all, most of the daemon's CPU per created file
// (figures in the README's Benchmarks).

// maxSpares bounds the spare data files a draft keeps (empty files: an
// inode each).
const maxSpares = 16384

// spares are a draft's spare data files.
type spares struct {
	mu    sync.Mutex
	dir   int      // the spare directory (O_PATH), -1: none
	names []string // its files
	next  uint64   // the number the next file's name takes
}

// openSpares opens the spare directory in the draft directory dir and
// takes the files a previous run left there (their content, if a crash
// came before they were emptied, goes when they are taken).
func openSpares(dir string) (*spares, error) {
	p := filepath.Join(dir, "spare")
	if err := os.MkdirAll(p, 0o700); err != nil {
		return nil, err
	}
	fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	s := &spares{dir: fd}
	ents, _ := os.ReadDir(p)
	for _, e := range ents {
		n, err := strconv.ParseUint(e.Name(), 16, 64)
		if err != nil || !e.Type().IsRegular() || len(s.names) == maxSpares {
			os.RemoveAll(filepath.Join(p, e.Name()))
			continue
		}
		s.names = append(s.names, e.Name())
		s.next = max(s.next, n+1)
	}
	return s, nil
}

// close closes the spare directory. The draft's data directory is
// closed after it: a file released after that (see retire) is removed
// by its path.
func (s *spares) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir >= 0 {
		unix.Close(s.dir)
		s.dir = -1
	}
}

// take moves a spare file to name in the directory data, and reports
// whether there was one. The file may still have content (see
// openSpares): the caller truncates it.
func (s *spares) take(data int, name string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.dir >= 0 && len(s.names) > 0 {
		last := s.names[len(s.names)-1]
		s.names = s.names[:len(s.names)-1]
		if unix.Renameat(s.dir, last, data, name) == nil {
			return true
		}
	}
	return false
}

// retire removes the data file name from the directory data: it is
// emptied and kept as a spare when there is room and it has no other
// link (a commit's undo or a rewind may have linked it), else removed.
// False when the spares are closed: data may be too, and the caller
// removes the file by its path.
func (s *spares) retire(data int, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir < 0 {
		return false
	}
	var st unix.Stat_t
	if unix.Fstatat(data, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Nlink != 1 ||
		st.Mode&unix.S_IFMT != unix.S_IFREG || len(s.names) == maxSpares {
		unix.Unlinkat(data, name, 0)
		return true
	}
	spare := strconv.FormatUint(s.next, 16)
	if unix.Renameat(data, name, s.dir, spare) != nil {
		unix.Unlinkat(data, name, 0)
		return true
	}
	s.next++
	if st.Size > 0 && s.truncate(spare) != nil {
		unix.Unlinkat(s.dir, spare, 0)
		return true
	}
	s.names = append(s.names, spare)
	return true
}

// truncate empties the spare file name.
func (s *spares) truncate(name string) error {
	fd, err := unix.Openat(s.dir, name, unix.O_WRONLY|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// newData makes the data file of new inode ino, a spare if there is one,
// and opens it with flag (which has O_CREAT and O_TRUNC).
func (d *Draft) newData(ino uint64, flag int) (*os.File, error) {
	if !d.spare.take(d.data, dataName(ino)) {
		return d.openData(ino, flag, dataPerm)
	}
	f, err := d.openData(ino, flag, dataPerm)
	if err != nil {
		return nil, err
	}
	// Its times are a new file's: O_TRUNC moved the mtime and ctime
	// only.
	now := []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
	if err := unix.UtimesNanoAt(d.data, dataName(ino), now, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "utimes", Path: d.dataPath(ino), Err: err}
	}
	return f, nil
}
