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
	r    *bufio.Reader
	max  int
	buf  []byte // the current line; reused, so valid until the next call
	head []byte // the start of the last line that was too long
}

// NewReader reads lines of at most max bytes, without their ending, from r.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next line without its ending, valid until the next
// call; ErrTooLong when it was over the limit; io.EOF at the end.
func (l *Reader) Next() ([]byte, error) {
	if cap(l.buf) > keepBuf {
		l.buf = nil
	}
	l.buf = l.buf[:0]
	tooLong := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !tooLong {
			// +2: the "\r\n" that will not count.
			if len(l.buf)+len(chunk) > l.max+2 {
				l.head = append(l.head[:0], l.buf[:min(len(l.buf), HeadSize)]...)
				l.head = append(l.head, chunk[:min(len(chunk), HeadSize-len(l.head))]...)
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
			return nil, ErrTooLong
		}
		line := bytes.TrimSuffix(l.buf, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > l.max {
			l.head = append(l.head[:0], line[:min(len(line), HeadSize)]...)
			return nil, ErrTooLong
		}
		return line, nil
	}
}

// Head returns the first HeadSize bytes of the last line that was too
// long, valid until the next call.
func (l *Reader) Head() []byte { return l.head }
