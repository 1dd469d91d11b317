//go:build linux

package overlay

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Spare data files: the data file of a draft file that goes is kept (and
// emptied, unless small: see smallSpare), and a new file takes one
// instead of creating its data file; taking it empties it.
// Deleting thousands of files and making thousands (rm -rf, then an
// untar or an rsync, as agents do) then allocates and frees no inodes in
// the state directory. Creating a file is what this saves: ext4 without
// a journal skips every inode freed in the last minute (five while its
// table block is unwritten) in the group it allocates from, and every
// data file is allocated from the data directory's group, so after an
// rm -rf of 4,000 draft files each create scanned them all, most of the
// daemon's CPU per created file (figures in the README's Benchmarks).
//
// A file the draft creates gets a numbered data file (fileName), whose
// number its inode records (inode.File), so that a spare stays where it
// is, under its name, from the inode it was emptied for to the one that
// takes it: no rename. Other data files are named by their inode's
// number (copied up, put back by an undo or a rewind), and become spares
// by one rename to a number. A numbered file no record names is a spare
// (collectGarbage): left by a crash, or small, it may still have
// content, which goes when it is taken.

// maxSpares bounds the spare data files a draft keeps (an inode each).
const maxSpares = 16384

// A spare of at most smallSpare bytes keeps its content until it
// is taken, which truncates it anyway, as long as the spares keep at most
// keptSpareBytes so: emptying it when its file goes (an open with
// O_TRUNC, by name in the data directory) was a quarter of the daemon's
// CPU for an rm -rf of files the draft made.
const (
	smallSpare     = 16 << 10
	keptSpareBytes = 16 << 20
)

// fileName is the name of numbered data file f. Its prefix is not a hex
// digit: it never meets a name an inode number gives.
func fileName(f uint64) string { return "n" + strconv.FormatUint(f, 16) }

// parseFileName is the number of a numbered data file's name; false for
// another name.
func parseFileName(name string) (uint64, bool) {
	h, ok := strings.CutPrefix(name, "n")
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseUint(h, 16, 64)
	return f, err == nil && fileName(f) == name
}

// spares are a draft's spare data files, numbered files in its data
// directory that no inode records.
type spares struct {
	mu     sync.Mutex // protects the following
	closed bool
	files  []uint64 // the spares' numbers
	kept   []int64  // the bytes each still holds on disk (see smallSpare), -1 if not known
	keptN  int64    // the sum of those known
	next   uint64   // the number the next new numbered file takes
	taken  uint64   // data files taken since the draft opened
	fresh  uint64   // of those, made new (no spare was left)
}

// openSpares returns the spares of the draft directory dir. Earlier
// versions kept them in dir/spare (empty files no record names), which
// goes.
func openSpares(dir string) (*spares, error) {
	if err := os.RemoveAll(filepath.Join(dir, "spare")); err != nil {
		return nil, err
	}
	return &spares{next: 1}, nil
}

// seen notes numbered file f, which an inode records: new ones take
// numbers past it.
func (s *spares) seen(f uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next = max(s.next, f+1)
}

// keep takes numbered file f, which no inode records, as a spare, and
// reports whether there was room.
func (s *spares) keep(f uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next = max(s.next, f+1)
	if len(s.files) == maxSpares {
		return false
	}
	s.add(f, -1) // what it holds goes when it is taken
	return true
}

// add keeps numbered file f, which holds kept bytes on disk (-1: not
// known), as a spare. Must be called with s.mu held.
func (s *spares) add(f uint64, kept int64) {
	s.files = append(s.files, f)
	s.kept = append(s.kept, kept)
	s.keptN += max(kept, 0)
}

// close stops retire: the draft's data directory is closed after it,
// and a file released after that (see retire) is removed by its path.
func (s *spares) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
}

// take returns the number of a data file for a new file: a spare's, or
// a new number (false) whose file the caller creates. A spare may still
// have content (see smallSpare, collectGarbage): empty reports that it
// has none, else the caller truncates it.
func (s *spares) take() (f uint64, spare, empty bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.taken++
	if n := len(s.files); n > 0 {
		f, kept := s.files[n-1], s.kept[n-1]
		s.files, s.keptN, s.kept = s.files[:n-1], s.keptN-max(kept, 0), s.kept[:n-1]
		return f, true, kept == 0
	}
	s.next++
	s.fresh++
	return s.next - 1, false, false
}

// aheadMax bounds the spares made ahead (see makeAhead).
const aheadMax = 4096

// makeAhead makes empty spare data files in the directory data while no
// file is taken, up to as many as had to be made new since the draft
// opened (a burst of creates tends to come again: an agent installs,
// builds, extracts), at most aheadMax: the next burst then takes spares
// instead of making each data file while a caller waits. It is called
// once the draft has been quiet a while (the timeline's quiet period)
// and yields between files; each is made with s.mu held, so data stays
// open meanwhile (see close).
func (s *spares) makeAhead(data int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	taken := s.taken
	s.mu.Unlock()
	for {
		s.mu.Lock()
		if s.closed || s.taken != taken || uint64(len(s.files)) >= min(aheadMax, s.fresh) {
			s.mu.Unlock()
			return
		}
		f := s.next
		s.next++
		fd, err := unix.Openat(data, fileName(f), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, dataPerm)
		if err == nil {
			unix.Close(fd)
			s.add(f, 0)
		}
		s.mu.Unlock()
		if err != nil && err != unix.EEXIST && err != unix.EINTR {
			return // a full disk, say: nothing is lost, a create makes its own
		}
		runtime.Gosched() // requests first: the daemon has one processor
	}
}

// retire removes the data file name from the directory data: it is
// kept as a spare when there is room and it has no other link (a
// commit's undo or a rewind may have linked it), emptied unless it is
// small (see smallSpare), else removed.
// False when the spares are closed: data may be too, and the caller
// removes the file by its path.
func (s *spares) retire(data int, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	var st unix.Stat_t
	if unix.Fstatat(data, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Nlink != 1 ||
		st.Mode&unix.S_IFMT != unix.S_IFREG || len(s.files) == maxSpares {
		unix.Unlinkat(data, name, 0)
		return true
	}
	f, numbered := parseFileName(name)
	if !numbered {
		// Never over a file: until collectGarbage has seen the numbers
		// in use (a recovery at open retires files before), next may
		// be one.
		f = s.next
		err := unix.Renameat2(data, name, data, fileName(f), unix.RENAME_NOREPLACE)
		for err == unix.EEXIST {
			f++
			err = unix.Renameat2(data, name, data, fileName(f), unix.RENAME_NOREPLACE)
		}
		s.next = f + 1
		if err != nil {
			unix.Unlinkat(data, name, 0)
			return true
		}
	}
	kept := (st.Size + 4095) &^ 4095 // its blocks may not be allocated yet
	if st.Size > 0 && (kept > smallSpare || s.keptN+kept > keptSpareBytes) {
		if truncateAt(data, fileName(f)) != nil {
			unix.Unlinkat(data, fileName(f), 0)
			return true
		}
		kept = 0
	}
	s.add(f, kept)
	return true
}

// truncateAt empties the file name in directory dir.
func truncateAt(dir int, name string) error {
	fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// newData makes the data file of new inode n, a spare if there is one,
// records its number in n, and opens it with flag (which has O_CREAT and
// O_TRUNC). A flag of noHandle opens nothing (a MKNOD's file, which the
// kernel opens later if at all): a new file is made with mknodat, an
// empty spare only gets its times, so that tar's file costs no open and
// close of its data file.
func (d *Draft) newData(n *inode, flag int) (*os.File, error) {
	if d.spare == nil {
		return nil, fmt.Errorf("%s: %w", d.st.path, errReadOnly)
	}
	f, spare, empty := d.spare.take()
	name := fileName(f)
	var fd *os.File
	var err error
	switch {
	case flag == noHandle && !spare:
		err = d.mknodData(name)
	case flag == noHandle && !empty:
		err = truncateAt(d.data, name)
		if err != nil {
			err = &os.PathError{Op: "truncate", Path: d.dataPath(name), Err: err}
		}
	case flag == noHandle: // an empty spare: new times, below
	default:
		if !spare {
			flag |= os.O_EXCL // a new number's file is new
		}
		if empty {
			// Truncating an empty file still journals its inode; the
			// times are set below.
			flag &^= os.O_TRUNC
		}
		fd, err = d.openData(name, flag, dataPerm)
	}
	if err != nil {
		if spare {
			d.spare.retire(d.data, name)
		}
		return nil, err
	}
	n.File = f
	if !spare {
		return fd, nil
	}
	// Its times are a new file's (O_TRUNC moves the mtime and ctime
	// only).
	now := []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
	if err := unix.UtimesNanoAt(d.data, name, now, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if fd != nil {
			fd.Close()
		}
		d.spare.retire(d.data, name)
		return nil, &os.PathError{Op: "utimes", Path: d.dataPath(name), Err: err}
	}
	return fd, nil
}

// noHandle is newData's flag for a data file no one opens yet.
const noHandle = -1
