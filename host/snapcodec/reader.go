package snapcodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// ErrCorrupt is returned (wrapped) for a payload that does not decode:
// cut short, a count or reference past what it holds, bytes left over.
var ErrCorrupt = errors.New("fold snapshot payload does not decode")

// Reader decodes one payload. After the first error every read returns
// a zero value and Err reports that error, so a decoder checks once, at
// the end of a part.
type Reader struct {
	body []byte
	off  int
	// strs holds every string back to back, string i from strAt[i] to
	// strAt[i+1]; blobs and blobAt the byte strings alike. Offsets, not
	// a string header a string: a 100 000-entry table costs 0.4 MB, not
	// 1.6.
	strs   string
	strAt  []uint32
	blobs  []byte
	blobAt []uint32
	err    error
}

// maxTables bounds the bytes of a payload's strings and byte strings
// together, so that every offset into them fits in 32 bits; a payload's
// header line says how many bytes it has, and no fold comes near.
const maxTables = 1<<32 - 1

// NewReader reads p's tables and returns a Reader of its body. The
// strings share one allocation, the byte strings another (a copy: the
// Reader's results do not alias p, and each byte string's capacity ends
// where it does, so an append to one never writes into the next).
// Errors wrap ErrCorrupt.
func NewReader(p []byte) (*Reader, error) {
	h := &Reader{body: p}
	ns, nb, nbody := h.Uint(), h.Uint(), h.Uint()
	// Each table entry takes at least one byte of lengths.
	if h.err != nil || ns > uint64(len(p)) || nb > uint64(len(p)) || ns+nb > uint64(len(p)-h.off) {
		return nil, fmt.Errorf("%w: tables of %d strings and %d byte strings in %d bytes", ErrCorrupt, ns, nb, len(p))
	}
	// The lengths are read twice — once to check them, once to note
	// where each entry ends — rather than kept in lists of their own.
	lens := h.off
	var sum, strBytes uint64
	for i := range ns + nb {
		if i == ns {
			strBytes = sum
		}
		v := h.Uint()
		if v > uint64(len(p)) || sum+v > uint64(len(p)) || sum+v > maxTables {
			return nil, fmt.Errorf("%w: strings and byte strings longer than the payload", ErrCorrupt)
		}
		sum += v
	}
	if nb == 0 {
		strBytes = sum
	}
	if h.err != nil || nbody > uint64(len(p)) || uint64(len(p)-h.off) != sum+nbody {
		return nil, fmt.Errorf("%w: %d bytes after the tables, they and the body say %d", ErrCorrupt, len(p)-h.off, sum+nbody)
	}
	start := h.off
	h.off = lens
	r := &Reader{strAt: make([]uint32, ns+1), blobAt: make([]uint32, nb+1)}
	r.strs = string(p[start : start+int(strBytes)])
	for i := range ns {
		r.strAt[i+1] = r.strAt[i] + uint32(h.Uint())
	}
	r.blobs = make([]byte, int(sum-strBytes))
	copy(r.blobs, p[start+int(strBytes):])
	for i := range nb {
		r.blobAt[i+1] = r.blobAt[i] + uint32(h.Uint())
	}
	r.body = p[h.off+int(sum):]
	return r, nil
}

// Fail sets the Reader's error (wrapping ErrCorrupt), unless it has one:
// for a decoder that finds what it read does not fit.
func (r *Reader) Fail(format string, args ...any) { r.fail(format, args...) }

func (r *Reader) fail(format string, args ...any) {
	if r.err == nil {
		r.setErr(fmt.Errorf("%w: byte %d: %s", ErrCorrupt, r.off, fmt.Sprintf(format, args...)))
	}
}

// setErr sets the first error and ends the body where it was found, so
// that the one-byte fast paths, which check only the bytes left, read
// nothing more after it.
func (r *Reader) setErr(err error) {
	r.err = err
	r.body = r.body[:r.off]
}

// Uint reads an unsigned varint.
func (r *Reader) Uint() uint64 {
	// Most numbers (counts, table references under 128, small values)
	// are one byte: read inline, as a restore reads millions of them.
	// After an error no bytes are left (setErr), so this path reads none.
	if r.off < len(r.body) {
		if b := r.body[r.off]; b < 0x80 {
			r.off++
			return uint64(b)
		}
	}
	return r.uintSlow()
}

func (r *Reader) uintSlow() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.body[r.off:])
	if n <= 0 {
		r.fail("a number is cut short or too long")
		return 0
	}
	r.off += n
	return v
}

// Int reads a signed (zigzag) varint.
func (r *Reader) Int() int64 {
	if r.off < len(r.body) {
		if b := r.body[r.off]; b < 0x80 {
			r.off++
			return int64(b>>1) ^ -int64(b&1)
		}
	}
	return r.intSlow()
}

func (r *Reader) intSlow() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.body[r.off:])
	if n <= 0 {
		r.fail("a number is cut short or too long")
		return 0
	}
	r.off += n
	return v
}

// Bool reads one byte, 0 or 1.
func (r *Reader) Bool() bool {
	if r.err != nil {
		return false
	}
	if r.off >= len(r.body) || r.body[r.off] > 1 {
		r.fail("not a boolean")
		return false
	}
	r.off++
	return r.body[r.off-1] == 1
}

// Len reads a count of elements that follow, each at least one byte:
// never more than the bytes left, so it can size an allocation.
func (r *Reader) Len() int {
	v := r.Uint()
	if v > uint64(len(r.body)-r.off) {
		r.fail("a count of %d with %d bytes left", v, len(r.body)-r.off)
		return 0
	}
	return int(v)
}

// Str reads a reference to the string table.
func (r *Reader) Str() string {
	v := r.Uint()
	if n := uint64(len(r.strAt)); n == 0 || v >= n-1 {
		r.fail("string %d of %d", v, max(n, 1)-1)
		return ""
	}
	return r.strs[r.strAt[v]:r.strAt[v+1]]
}

// Bytes reads a reference to the byte-string table: nil for 0.
func (r *Reader) Bytes() []byte {
	v := r.Uint()
	if v == 0 {
		return nil
	}
	if v >= uint64(len(r.blobAt)) {
		r.fail("byte string %d of %d", v, max(len(r.blobAt), 1)-1)
		return nil
	}
	from, to := r.blobAt[v-1], r.blobAt[v]
	return r.blobs[from:to:to]
}

// Time reads a time written by Writer.Time.
func (r *Reader) Time() time.Time {
	v := r.Uint()
	var t time.Time
	if r.err != nil {
		return t
	}
	// Compared before the conversion: a length past math.MaxInt turned
	// negative and passed.
	if v > uint64(len(r.body)-r.off) {
		r.fail("a time of %d bytes with %d left", v, len(r.body)-r.off)
		return t
	}
	n := int(v)
	if err := t.UnmarshalBinary(r.body[r.off : r.off+n]); err != nil {
		if r.err == nil {
			r.setErr(fmt.Errorf("%w: byte %d: time: %w", ErrCorrupt, r.off, err))
		}
		return time.Time{}
	}
	r.off += n
	return t
}

// Err returns the first error, wrapping ErrCorrupt; nil if none.
func (r *Reader) Err() error { return r.err }

// Done returns Err, or an error when body bytes are left unread.
func (r *Reader) Done() error {
	if r.err == nil && r.off != len(r.body) {
		r.fail("%d bytes left after the payload", len(r.body)-r.off)
	}
	return r.err
}

// Detach returns a Reader of the part of the body from at — a copy of r
// saved earlier — up to where r is now, with a copy of those bytes of
// its own: for a part of a payload read again later, once the payload's
// bytes may be gone (a mapped file unmapped). It shares r's tables,
// which are copies already.
func (r *Reader) Detach(at Reader) *Reader {
	at.body = append([]byte(nil), r.body[at.off:max(r.off, at.off)]...)
	at.off = 0
	return &at
}
