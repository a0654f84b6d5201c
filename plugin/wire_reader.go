package plugin

import (
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// wireReader walks the fields of one message: next moves to a field
// (num, typ), whose value one of the readers below takes. A field it
// cannot take (malformed, of another wire type, a field not in repeats
// seen twice) sets bad and ends the walk.
type wireReader struct {
	b       []byte
	repeats uint64 // bit n: field n may appear more than once
	seen    uint64 // bit n: field n was read
	num     protowire.Number
	typ     protowire.Type
	bad     bool
}

// next moves to the next field; false at the end or when the field cannot
// be taken.
func (r *wireReader) next() bool {
	if len(r.b) == 0 || r.bad {
		return false
	}
	num, typ, n := protowire.ConsumeTag(r.b)
	if n < 0 || num >= 64 || r.seen&(1<<num) != 0 {
		// A singular field twice: protobuf merges, the slow way decides.
		r.bad = true
		return false
	}
	if r.repeats&(1<<num) == 0 {
		r.seen |= 1 << num
	}
	r.b, r.num, r.typ = r.b[n:], num, typ
	return true
}

// bytes reads a length-delimited field.
func (r *wireReader) bytes() []byte {
	if r.typ != protowire.BytesType {
		r.bad = true
		return nil
	}
	v, n := protowire.ConsumeBytes(r.b)
	if n < 0 {
		r.bad = true
		return nil
	}
	r.b = r.b[n:]
	return v
}

// str reads a string field, which must be UTF-8 as protobuf requires.
func (r *wireReader) str() string {
	v := r.bytes()
	if !utf8.Valid(v) {
		r.bad = true
		return ""
	}
	return string(v)
}

// varint reads a varint field no larger than limit.
func (r *wireReader) varint(limit uint64) uint64 {
	if r.typ != protowire.VarintType {
		r.bad = true
		return 0
	}
	v, n := protowire.ConsumeVarint(r.b)
	if n < 0 || v > limit {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

// cloneBytes copies b, which belongs to gRPC's receive buffer; nil when empty.
func cloneBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}
