// Package lines reads newline-delimited messages of bounded length, the
// framing both the control socket and ACP use: a line ends at "\n", a
// "\r" before it is dropped, a last line without a newline counts, and a
// line over the limit is read past, never held whole.
package lines

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// ErrTooLong: a line was over the limit and has been skipped; the reader
// stands at the following line.
var ErrTooLong = errors.New("message too long")

// HeadSize is how much of a line that was too long [Reader.Head] keeps,
// enough to find a JSON-RPC id that comes before large parameters.
const HeadSize = 64 << 10

// keepBuf is the largest line buffer kept for the next line: a huge
// message's buffer is not kept for the connection's life.
const keepBuf = 4 << 20

// Reader splits a stream into lines of at most max bytes.
type Reader struct {
	r     *bufio.Reader
	max   int
	buf   []byte   // the current line; reused, so valid until the next call
	parts [][]byte // the pieces of a line longer than r's buffer
	head  []byte   // the start of the last line that was too long
}

// NewReader reads lines of at most max bytes, without their ending, from r.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next line without its ending, valid until the next
// call; ErrTooLong when it was over the limit; io.EOF at the end. A line
// longer than the read buffer is gathered in pieces and copied once into
// a buffer of its size: a large message costs twice its size at most
// while it is read, not the slack of a buffer grown by doubling.
func (l *Reader) Next() ([]byte, error) {
	if cap(l.buf) > keepBuf {
		l.buf = nil // not kept while the next line is awaited
	}
	l.parts = l.parts[:0]
	n := 0
	tooLong := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !tooLong {
			// +2: the "\r\n" that will not count.
			if n+len(chunk) > l.max+2 {
				l.keepHead(chunk)
				tooLong, l.parts, n = true, l.parts[:0], 0
			} else if errors.Is(err, bufio.ErrBufferFull) {
				l.parts = append(l.parts, bytes.Clone(chunk))
				n += len(chunk)
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && (n+len(chunk) > 0 || tooLong):
		default:
			return nil, err
		}
		if tooLong {
			return nil, ErrTooLong
		}
		line := l.gather(chunk, n+len(chunk))
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > l.max {
			l.head = append(l.head[:0], line[:min(len(line), HeadSize)]...)
			return nil, ErrTooLong
		}
		return line, nil
	}
}

// gather joins the pieces of a line and its last chunk, n bytes in all,
// reusing the line buffer up to keepBuf.
func (l *Reader) gather(last []byte, n int) []byte {
	if n > cap(l.buf) {
		l.buf = make([]byte, 0, n)
	}
	l.buf = l.buf[:0]
	for i, p := range l.parts {
		l.buf = append(l.buf, p...)
		l.parts[i] = nil
	}
	l.parts = l.parts[:0]
	return append(l.buf, last...)
}

// Release gives the line Next returned last to the caller for good:
// the next line is read into a buffer of its own.
func (l *Reader) Release() { l.buf = nil }

// keepHead keeps the start of a line found too long at chunk.
func (l *Reader) keepHead(chunk []byte) {
	l.head = l.head[:0]
	for _, p := range l.parts {
		l.head = append(l.head, p[:min(len(p), HeadSize-len(l.head))]...)
	}
	l.head = append(l.head, chunk[:min(len(chunk), HeadSize-len(l.head))]...)
}

// Head returns the first HeadSize bytes of the last line that was too
// long, valid until the next call.
func (l *Reader) Head() []byte { return l.head }
