//go:build linux

package overlay

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
)

// dirSize is the space the files below dir take on disk (allocated
// blocks, so a hard link is counted once per name and a sparse file by
// what it holds); unreadable parts count as nothing.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := e.Info(); err == nil {
			n += allocated(fi)
		}
		return nil
	})
	return n
}

// FormatSize prints a byte count for people.
func FormatSize(n int64) string {
	switch {
	case n >= 10<<30:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 10<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 10<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// allocated is the space a file takes: its blocks, else its size.
func allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}
