package store

import (
	"bytes"
	"errors"
	"io"
)

// maxLineBytes bounds one event line in memory. A longer line is reported
// as unparsable (it cannot be an event this package wrote unless a policy
// allowed a payload that large).
const maxLineBytes = 256 << 20

// errLineTooLong marks a line longer than maxLineBytes; the line's bytes are
// skipped.
var errLineTooLong = errors.New("line longer than the 256 MiB limit")

// lineReader splits a byte stream into lines without loading it whole. The
// line returned by next is valid until the following call.
type lineReader struct {
	r     io.Reader
	buf   []byte
	start int   // buf[start:end] holds unread bytes
	end   int   //
	off   int64 // stream offset of buf[start]
	eof   bool
	err   error // sticky read error other than EOF
}

func newLineReader(r io.Reader, off int64, bufSize int) *lineReader {
	return &lineReader{r: r, buf: make([]byte, bufSize), off: off}
}

// fill reads more bytes, growing the buffer when it is full of one line.
func (lr *lineReader) fill() {
	if lr.eof || lr.err != nil {
		return
	}
	if lr.start > 0 {
		copy(lr.buf, lr.buf[lr.start:lr.end])
		lr.end -= lr.start
		lr.start = 0
	}
	if lr.end == len(lr.buf) {
		nb := make([]byte, 2*len(lr.buf))
		copy(nb, lr.buf[:lr.end])
		lr.buf = nb
	}
	n, err := lr.r.Read(lr.buf[lr.end:])
	lr.end += n
	if err == io.EOF {
		lr.eof = true
	} else if err != nil {
		lr.err = err
	}
}

// next returns the next line without its line feed, the offset of its first
// byte, and whether it ended with a line feed (an unterminated line is the
// last one). It returns io.EOF when no bytes are left, and errLineTooLong
// (with off and terminated set) for an overlong line, whose bytes it skips.
func (lr *lineReader) next() (line []byte, off int64, terminated bool, err error) {
	scanned := 0
	for {
		if k := bytes.IndexByte(lr.buf[lr.start+scanned:lr.end], '\n'); k >= 0 {
			k += lr.start + scanned
			line = lr.buf[lr.start:k]
			off = lr.off
			lr.off += int64(k + 1 - lr.start)
			lr.start = k + 1
			return line, off, true, nil
		}
		scanned = lr.end - lr.start
		if lr.err != nil {
			return nil, lr.off, false, lr.err
		}
		if lr.eof {
			if lr.start == lr.end {
				return nil, lr.off, false, io.EOF
			}
			line = lr.buf[lr.start:lr.end]
			off = lr.off
			lr.off += int64(lr.end - lr.start)
			lr.start = lr.end
			return line, off, false, nil
		}
		if scanned >= maxLineBytes {
			return lr.skipLine()
		}
		lr.fill()
	}
}

// skipLine discards the rest of an overlong line.
func (lr *lineReader) skipLine() ([]byte, int64, bool, error) {
	off := lr.off
	for {
		if k := bytes.IndexByte(lr.buf[lr.start:lr.end], '\n'); k >= 0 {
			lr.off += int64(k + 1)
			lr.start += k + 1
			return nil, off, true, errLineTooLong
		}
		lr.off += int64(lr.end - lr.start)
		lr.start, lr.end = 0, 0
		if lr.err != nil {
			return nil, off, false, lr.err
		}
		if lr.eof {
			return nil, off, false, errLineTooLong
		}
		lr.fill()
	}
}

// atEOF reports whether no bytes follow the last line returned. A read
// error counts as not at EOF (the caller will meet the error next).
func (lr *lineReader) atEOF() bool {
	for lr.start == lr.end {
		if lr.eof {
			return true
		}
		if lr.err != nil {
			return false
		}
		lr.fill()
	}
	return false
}
