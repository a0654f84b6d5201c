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
//
// A NUL byte ends the lines: the writer keeps a zero-filled tail past the
// last line (docs/architecture.md, "The zero tail"), and no event line holds a NUL
// (canonical JSON escapes it). next returns a line cut short by a NUL as
// unterminated, and io.EOF from the NUL on, with nul set; skipNULs reads
// on past the NULs when the caller must know what follows them.
type lineReader struct {
	r     io.Reader
	buf   []byte
	start int   // buf[start:end] holds unread bytes
	end   int   //
	off   int64 // stream offset of buf[start]
	eof   bool
	err   error // sticky read error other than EOF
	nul   bool  // buf[start] is a NUL that ended the lines
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
		if lr.nul {
			return nil, lr.off, false, io.EOF
		}
		seg := lr.buf[lr.start+scanned : lr.end]
		k := bytes.IndexByte(seg, '\n')
		if k >= 0 {
			seg = seg[:k]
		}
		if z := bytes.IndexByte(seg, 0); z >= 0 {
			z += lr.start + scanned
			line, off = lr.buf[lr.start:z], lr.off
			lr.off += int64(z - lr.start)
			lr.start, lr.nul = z, true
			if len(line) == 0 {
				return nil, off, false, io.EOF
			}
			return line, off, false, nil
		}
		if k >= 0 {
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

// atEOF reports whether no bytes follow the last line returned, or only
// from a NUL on (the zero tail, which the caller examines with skipNULs).
// A read error counts as not at EOF (the caller will meet the error next).
func (lr *lineReader) atEOF() bool {
	if lr.nul {
		return true
	}
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

// skipNULs reads past NUL bytes. It returns the offset of the next byte
// that is not NUL, or io.EOF (with the offset of the end) when only NULs
// are left; after it, next reads lines from that byte on.
func (lr *lineReader) skipNULs() (int64, error) {
	lr.nul = false
	for {
		for lr.start < lr.end {
			b := lr.buf[lr.start:min(lr.end, lr.start+4096)]
			if !bytes.Equal(b, zeros[:len(b)]) {
				for b[0] == 0 {
					b = b[1:]
					lr.start++
					lr.off++
				}
				return lr.off, nil
			}
			lr.start += len(b)
			lr.off += int64(len(b))
		}
		if lr.err != nil {
			return lr.off, lr.err
		}
		if lr.eof {
			return lr.off, io.EOF
		}
		lr.skipHole()
		if lr.eof {
			return lr.off, io.EOF
		}
		lr.fill()
	}
}

// skipHole moves a reader whose buffer is used up past a hole of the file
// at its offset (dataAt), which reads as NULs: a record's zero tail is
// written NULs, so only a file made sparse by hand (truncate -s 20G) has
// one, and reading its gigabytes of NULs took every command tens of
// seconds. Up to the section's end it sets eof, as reading the hole would
// have (the offset stays at the hole's start). A reader that is not a
// section of a file is left as it is.
func (lr *lineReader) skipHole() {
	sr, ok := lr.r.(*io.SectionReader)
	if !ok || lr.start < lr.end {
		return
	}
	outer, base, n := sr.Outer()
	if pos, err := sr.Seek(0, io.SeekCurrent); err != nil || base+pos != lr.off {
		return
	}
	next, end, ok := dataAt(outer, lr.off)
	switch {
	case !ok || (!end && next <= lr.off):
		return
	case end || next >= base+n:
		lr.eof = true // the offset stays where the hole starts
		return
	}
	if _, err := sr.Seek(next-base, io.SeekStart); err == nil {
		lr.off = next
	}
}
