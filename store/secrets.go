package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// secretInJSON looks for a known secret inside the JSON text b: in its bytes
// (raw or escaped forms) and, because an escape can split a value in the
// bytes ("sk-ab\u0063d"), in every decoded key, string and number. found
// reports a hit; path names where (e.g. `data.result.env[2]`), or is ""
// when the hit is only visible in the bytes. The path never contains a
// secret: a key holding one is shown as [<redacted>].
func (p *policy) secretInJSON(b []byte, root string) (found bool, path string) {
	inBytes := p.containsSecret(b)
	if !inBytes && bytes.IndexByte(b, '\\') < 0 {
		return false, "" // no escapes: decoded text equals the bytes
	}
	if path, ok := p.walkForSecret(b, root); ok {
		return true, path
	}
	return inBytes, ""
}

// walkForSecret decodes b token by token (a stream of values is allowed, for
// JSON Lines) and returns the path of the first key or scalar whose decoded
// text holds a secret.
func (p *policy) walkForSecret(b []byte, root string) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	type frame struct {
		array bool
		index int
		key   string
	}
	var stack []frame
	pathOf := func(last string) string {
		var sb strings.Builder
		sb.WriteString(root)
		for _, f := range stack {
			if f.array {
				sb.WriteString("[" + strconv.Itoa(f.index) + "]")
			} else if f.key != "" {
				sb.WriteString(f.key)
			}
		}
		sb.WriteString(last)
		return sb.String()
	}
	keySegment := func(k string) string {
		switch {
		case p.containsRawSecret(k) || p.containsSecret([]byte(k)):
			return "[<redacted>]"
		case isPlainKey(k):
			return "." + k
		default:
			return "[" + quoteShort(k) + "]"
		}
	}
	expectKey := func() bool {
		return len(stack) > 0 && !stack[len(stack)-1].array && stack[len(stack)-1].key == ""
	}
	// afterValue advances the enclosing container past one value.
	afterValue := func() {
		if len(stack) == 0 {
			return
		}
		top := &stack[len(stack)-1]
		if top.array {
			top.index++
		} else {
			top.key = ""
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return "", false
		}
		if err != nil {
			return "", false
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, frame{})
			case '[':
				stack = append(stack, frame{array: true})
			default:
				stack = stack[:len(stack)-1]
				afterValue()
			}
			continue
		case string:
			if expectKey() {
				if p.containsRawSecret(t) {
					return pathOf("") + " (a member name)", true
				}
				stack[len(stack)-1].key = keySegment(t)
				continue
			}
			if p.containsRawSecret(t) {
				return pathOf(""), true
			}
		case json.Number:
			if p.containsRawSecret(string(t)) {
				return pathOf(""), true
			}
		}
		afterValue()
	}
}

func isPlainKey(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(isAlnum(c) || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// checkEventSecrets refuses an event holding a known secret in its type, id
// or data. raw is the data as marshalled, canon its canonical form (which
// has every needless escape removed). what names the event for the error.
func (p *policy) checkEventSecrets(what, typ, id string, raw, canon []byte) error {
	if !p.hasSecrets() {
		return nil
	}
	if p.containsSecret([]byte(typ)) {
		return fmt.Errorf("%w: event %s: its type contains a known secret (value withheld)", ErrKnownSecret, what)
	}
	if p.containsSecret([]byte(id)) {
		return fmt.Errorf("%w: event %s (type %q): its id contains a known secret (value withheld)", ErrKnownSecret, what, typ)
	}
	for _, b := range [][]byte{canon, raw} {
		if found, path := p.secretInJSON(b, "data"); found {
			where := "its data"
			if path != "" {
				where = "field " + path
			}
			return fmt.Errorf("%w: event %s (type %q): %s contains a known secret (value withheld)", ErrKnownSecret, what, typ, where)
		}
	}
	return nil
}

// redact replaces every occurrence of every secret form in text with
// redactionMarker. Overlapping or adjacent matches become one marker.
// changed reports whether anything was replaced.
func (p *policy) redact(text []byte) (out []byte, changed bool) {
	if !p.hasSecrets() {
		return text, false
	}
	type span struct{ from, to int }
	var spans []span
	for _, f := range p.forms {
		for off := 0; ; {
			k := bytes.Index(text[off:], f)
			if k < 0 {
				break
			}
			spans = append(spans, span{off + k, off + k + len(f)})
			off += k + 1
		}
	}
	if len(spans) == 0 {
		return text, false
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	out = make([]byte, 0, len(text))
	pos := 0
	for i := 0; i < len(spans); {
		from, to := spans[i].from, spans[i].to
		for i++; i < len(spans) && spans[i].from <= to; i++ {
			to = max(to, spans[i].to)
		}
		out = append(out, text[pos:from]...)
		out = append(out, redactionMarker...)
		pos = to
	}
	out = append(out, text[pos:]...)
	return out, true
}
