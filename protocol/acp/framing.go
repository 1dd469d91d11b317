package acp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// MaxMessage is the longest message, in bytes without its line ending,
// the proxy passes: the TypeScript SDK's default limit. A longer line is
// skipped and its sender told so.
const MaxMessage = 32 << 20

// errTooLong: a line was over the limit and has been skipped.
var errTooLong = errors.New("message too long")

// lineReader splits a stream into newline-delimited messages as the ACP
// SDKs do: a line ends at "\n", a "\r" before it is dropped, and a last
// line without a newline counts. Lines may be of any length up to max;
// longer ones are read past, never held whole.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte // the current line; reused, so valid until the next call
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its ending; errTooLong when it was
// over max bytes (the reader then stands at the following line); io.EOF
// at the end.
func (l *lineReader) next() ([]byte, error) {
	if cap(l.buf) > 4<<20 {
		l.buf = nil // do not keep a huge message's buffer for good
	}
	l.buf = l.buf[:0]
	tooLong := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !tooLong {
			// +2: the "\r\n" that will not count.
			if len(l.buf)+len(chunk) > l.max+2 {
				tooLong, l.buf = true, l.buf[:0]
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && (len(l.buf) > 0 || tooLong):
		default:
			return nil, err
		}
		if tooLong {
			return nil, errTooLong
		}
		line := bytes.TrimSuffix(l.buf, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > l.max {
			return nil, errTooLong
		}
		return line, nil
	}
}

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
