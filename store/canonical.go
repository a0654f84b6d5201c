package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// marshalData turns NewEvent.Data into JSON text. A json.RawMessage passes
// through unchanged (a nil one is null) and is not yet validated; valid
// reports whether the text is known to be valid JSON.
//
// Marshalled data is written into e's buffer (reset first), so raw aliases
// it unless v is nil or a json.RawMessage. A json.RawMessage is the
// caller's own bytes, copied only when keep says raw outlives the call
// it was passed to.
func marshalData(v any, e *encoder, keep bool) (raw []byte, valid bool, err error) {
	switch d := v.(type) {
	case nil:
		return []byte("null"), true, nil
	case json.RawMessage:
		if d == nil {
			return []byte("null"), true, nil
		}
		if keep {
			return bytes.Clone(d), false, nil
		}
		return d, false, nil
	}
	e.buf.Reset()
	err = e.enc.Encode(v)
	b := bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))
	if err != nil {
		var ue *json.UnsupportedValueError
		var te *json.UnsupportedTypeError
		switch {
		case errors.As(err, &ue):
			return nil, false, errors.New("data holds a value JSON cannot represent (NaN, ±Inf or a cycle)")
		case errors.As(err, &te):
			return nil, false, fmt.Errorf("data holds a type JSON cannot represent (%s)", te.Type)
		}
		// A MarshalJSON error may quote content; say only where it came from.
		return nil, false, fmt.Errorf("data could not be marshalled to JSON (%T)", v)
	}
	return b, true, nil
}

// encoder marshals event data into a reused buffer.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

func newEncoder() *encoder {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	// Without HTML escaping, marshalled maps are usually canonical already
	// and skip the canonicaliser.
	e.enc.SetEscapeHTML(false)
	return e
}

// encoders holds the encoders prepare marshals event data with.
var encoders = sync.Pool{New: func() any { return newEncoder() }}

// putEncoder returns e to encoders unless its buffer grew large (one huge
// event should not pin it).
func putEncoder(e *encoder) {
	if e.buf.Cap() <= 64<<10 {
		encoders.Put(e)
	}
}
