package runstate

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/obversa/obversa/plugin"
)

// decodeUsage decodes the usage of a graph:engine-attempt-recorded as
// decode does. The executor writes it with encoding/json, members in
// plugin.Usage's order, and folds it once per engine call, so that form
// is read directly; anything else (other spacing or order, null, a number
// that is not a plain integer) goes through decode. FuzzDecodeUsage holds
// both to the same result.
func decodeUsage(raw json.RawMessage, u *plugin.Usage) error {
	if v, ok := usageFast(raw); ok {
		*u = v
		return nil
	}
	return decode(raw, u)
}

// usageMembers are plugin.Usage's integer members in the order
// encoding/json writes them (each omitted when zero).
var usageMembers = []string{`,"input":`, `,"output":`, `,"cache_read":`, `,"cache_creation":`}

// usageFast reads {"known":B[,"input":N][,"output":N][,"cache_read":N][,"cache_creation":N]}
// and reports whether raw had exactly that form.
func usageFast(raw []byte) (plugin.Usage, bool) {
	var u plugin.Usage
	b, ok := bytes.CutPrefix(raw, []byte(`{"known":`))
	if !ok {
		return u, false
	}
	switch {
	case bytes.HasPrefix(b, []byte("true")):
		u.Known, b = true, b[4:]
	case bytes.HasPrefix(b, []byte("false")):
		b = b[5:]
	default:
		return u, false
	}
	fields := []*int64{&u.Input, &u.Output, &u.CacheRead, &u.CacheCreation}
	for i, name := range usageMembers {
		rest, ok := bytes.CutPrefix(b, []byte(name))
		if !ok {
			continue
		}
		n, after, ok := plainInt(rest)
		if !ok {
			return u, false
		}
		*fields[i], b = n, after
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
