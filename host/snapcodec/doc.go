// Package snapcodec is the binary encoding of the fold snapshot's payload
// (docs/architecture.md, "Fold snapshot"): varints, and strings and byte
// strings kept once each in two tables and referenced by index, so that a
// node's id or a position named in many places of a fold is stored, read
// and allocated once. A reader of a payload of n bytes allocates at most
// a few times n: every count it reads is bounded by the bytes left, so
// damaged input yields an error (ErrCorrupt), never a panic or a huge
// allocation. The layout is versioned by the fold snapshot's header
// (runstate.SnapshotFormat), not here.
//
// Layout:
//
//	uvarint strings, uvarint blobs, uvarint body bytes
//	strings × uvarint length
//	blobs × uvarint length
//	the strings' bytes, then the blobs' bytes, back to back
//	body
//
// In the body a string is the uvarint index of its table entry; a byte
// string 0 for nil, else its index plus one (an entry may be empty).
package snapcodec
