package snapcodec

import (
	"encoding/binary"
	"time"
)

// Writer encodes one payload. Its zero value is not ready: use NewWriter.
// The same sequence of calls always gives the same bytes (table entries
// are numbered in the order first written).
type Writer struct {
	body     []byte
	strs     map[string]uint32
	strList  []string
	blobs    map[string]uint32
	blobList [][]byte
	err      error
}

// NewWriter returns an empty Writer; sizeHint is the expected body size
// in bytes (0 when unknown).
func NewWriter(sizeHint int) *Writer {
	return &Writer{body: make([]byte, 0, sizeHint), strs: map[string]uint32{}, blobs: map[string]uint32{}}
}

// Uint writes v.
func (w *Writer) Uint(v uint64) { w.body = binary.AppendUvarint(w.body, v) }

// Int writes v (zigzag).
func (w *Writer) Int(v int64) { w.body = binary.AppendVarint(w.body, v) }

// Bool writes b as one byte.
func (w *Writer) Bool(b bool) {
	if b {
		w.body = append(w.body, 1)
	} else {
		w.body = append(w.body, 0)
	}
}

// Str writes s as a reference to its entry in the string table.
func (w *Writer) Str(s string) {
	id, ok := w.strs[s]
	if !ok {
		id = uint32(len(w.strList))
		w.strs[s] = id
		w.strList = append(w.strList, s)
	}
	w.Uint(uint64(id))
}

// Bytes writes b as a reference to its entry in the byte-string table;
// nil and empty stay apart.
func (w *Writer) Bytes(b []byte) {
	if b == nil {
		w.Uint(0)
		return
	}
	id, ok := w.blobs[string(b)]
	if !ok {
		w.blobList = append(w.blobList, b)
		id = uint32(len(w.blobList))
		w.blobs[string(b)] = id
	}
	w.Uint(uint64(id))
}

// Time writes t as time.Time's binary form (instant and zone offset, as
// encoding/gob keeps it), length-prefixed in the body.
func (w *Writer) Time(t time.Time) {
	n := len(w.body)
	w.body = append(w.body, 0)
	var err error
	if w.body, err = t.AppendBinary(w.body); err != nil && w.err == nil {
		w.err = err
	}
	// time's binary form is 15 or 16 bytes: one length byte suffices.
	w.body[n] = byte(len(w.body) - n - 1)
}

// Finish returns the payload: the tables, then the body. Errors: a time
// that has no binary form (a zone offset that is not whole minutes).
func (w *Writer) Finish() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	size := 3*binary.MaxVarintLen64 + len(w.body) + binary.MaxVarintLen32*(len(w.strList)+len(w.blobList))
	for _, s := range w.strList {
		size += len(s)
	}
	for _, b := range w.blobList {
		size += len(b)
	}
	out := make([]byte, 0, size)
	out = binary.AppendUvarint(out, uint64(len(w.strList)))
	out = binary.AppendUvarint(out, uint64(len(w.blobList)))
	out = binary.AppendUvarint(out, uint64(len(w.body)))
	for _, s := range w.strList {
		out = binary.AppendUvarint(out, uint64(len(s)))
	}
	for _, b := range w.blobList {
		out = binary.AppendUvarint(out, uint64(len(b)))
	}
	for _, s := range w.strList {
		out = append(out, s...)
	}
	for _, b := range w.blobList {
		out = append(out, b...)
	}
	return append(out, w.body...), nil
}
