package executor

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/obversa/obversa/plugin"
)

// The record keeps event data in RFC 8785 canonical form, and takes data
// already in it as it is; data with members out of order it sorts first
// (store: canonical data). The plugin types an engine call records are
// written in that form by hand (eventjson.go), so that a node's
// graph:engine-attempt-recorded needs no sorting.

// identityJSON is t as the record keeps it.
func identityJSON(t plugin.Identity) json.RawMessage {
	return scratch(func(b []byte) ([]byte, bool) { return appendIdentity(b, t), true })
}

// usageJSON is u as the record keeps it.
func usageJSON(u plugin.Usage) json.RawMessage {
	return scratch(func(b []byte) ([]byte, bool) { return appendUsage(b, u), true })
}

// partsJSON is parts as the record keeps them.
func partsJSON(parts []plugin.Part) json.RawMessage {
	b := scratch(func(b []byte) ([]byte, bool) { return appendParts(b, parts) })
	if b == nil {
		return mustJSON(parts) // a part's JSON is not JSON: as encoding/json says
	}
	return b
}

// scratch returns a copy, of its exact size, of what fn appends to a
// pooled buffer; nil when fn says it could not.
func scratch(fn func([]byte) ([]byte, bool)) []byte {
	sb := scratchBufs.Get().(*scratchBuf)
	b, ok := fn(sb.b[:0])
	var out []byte
	if ok {
		out = bytes.Clone(b)
	}
	if cap(b) <= 64<<10 {
		sb.b = b[:0] // a rare huge result is not kept
	}
	scratchBufs.Put(sb)
	return out
}

// scratchBuf is a buffer scratch reuses.
type scratchBuf struct{ b []byte }

var scratchBufs = sync.Pool{New: func() any { return &scratchBuf{b: make([]byte, 0, 1024)} }}
