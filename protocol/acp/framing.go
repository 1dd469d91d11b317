package acp

import (
	"bufio"
	"io"
	"sync"
)

// MaxMessage is the longest message, in bytes without its line ending,
// the proxy passes: the TypeScript SDK's default limit. A longer line is
// skipped and its sender told so.
const MaxMessage = 32 << 20

// lineWriter writes whole messages, one per line, to one peer; messages
// from several goroutines never interleave. After a write fails every
// later one fails the same way: the peer is gone.
type lineWriter struct {
	mu  sync.Mutex // protects the following
	w   *bufio.Writer
	err error
}

func newLineWriter(w io.Writer) *lineWriter {
	return &lineWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

// write sends one message, given in parts that are joined without
// separators, and a newline.
func (l *lineWriter) write(parts ...[]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	for _, p := range parts {
		l.w.Write(p)
	}
	l.w.WriteByte('\n')
	l.err = l.w.Flush()
	return l.err
}
