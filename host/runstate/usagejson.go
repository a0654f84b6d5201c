package runstate

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/obversa/obversa/plugin"
)

// decodeUsage decodes the usage of a graph:engine-attempt-recorded as
// decode does. The record keeps it in RFC 8785 canonical form (members
// sorted, integers plain: the executor writes it so, and the store keeps
// every event's data so), and the fold reads it once per engine call, so
// that form is read directly; anything else (other spacing or order,
// null, a number that is not a plain integer) goes through decode.
// FuzzDecodeUsage holds both to the same result.
func decodeUsage(raw json.RawMessage, u *plugin.Usage) error {
	if v, ok := usageFast(raw); ok {
		*u = v
		return nil
	}
	return decode(raw, u)
}

// usageFast reads
// {["cache_creation":N,]["cache_read":N,]["input":N,]"known":B[,"output":N]}
// (plugin.Usage's members in RFC 8785 order, each integer omitted when
// zero) and reports whether raw had exactly that form.
func usageFast(raw []byte) (plugin.Usage, bool) {
	var u plugin.Usage
	b, ok := bytes.CutPrefix(raw, []byte{'{'})
	if !ok {
		return u, false
	}
	for _, m := range []struct {
		name string
		v    *int64
	}{{`"cache_creation":`, &u.CacheCreation}, {`"cache_read":`, &u.CacheRead}, {`"input":`, &u.Input}} {
		rest, ok := bytes.CutPrefix(b, []byte(m.name))
		if !ok {
			continue
		}
		n, after, ok := plainInt(rest)
		if !ok || len(after) == 0 || after[0] != ',' {
			return u, false
		}
		*m.v, b = n, after[1:]
	}
	b, ok = bytes.CutPrefix(b, []byte(`"known":`))
	switch {
	case !ok:
		return u, false
	case bytes.HasPrefix(b, []byte("true")):
		u.Known, b = true, b[4:]
	case bytes.HasPrefix(b, []byte("false")):
		b = b[5:]
	default:
		return u, false
	}
	if rest, ok := bytes.CutPrefix(b, []byte(`,"output":`)); ok {
		n, after, ok := plainInt(rest)
		if !ok {
			return u, false
		}
		u.Output, b = n, after
	}
	return u, len(b) == 1 && b[0] == '}'
}

// plainInt reads a JSON integer without exponent or fraction that fits an
// int64 from the start of b and returns it and what follows it.
func plainInt(b []byte) (int64, []byte, bool) {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == start || (b[start] == '0' && i-start > 1) || (i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E')) {
		return 0, nil, false
	}
	n, err := strconv.ParseInt(string(b[:i]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	return n, b[i:], true
}
