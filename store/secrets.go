package store

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// secretInJSON looks for a known secret inside the JSON text b: in its bytes
// (raw or escaped forms) and, because an escape can split a value in the
// bytes ("sk-ab\u0063d"), in every decoded key, string and number. found
// reports a hit and name names the secret (secretName); path names where
// (e.g. `data.result.env[2]`), or is "" when the hit is only visible in
// the bytes. The path never contains a secret: a key holding one is shown
// as [<redacted>].
func (p *policy) secretInJSON(b []byte, root string) (found bool, path, name string) {
	name, inBytes := p.secretIn(b)
	if !inBytes && bytes.IndexByte(b, '\\') < 0 {
		return false, "", "" // no escapes: decoded text equals the bytes
	}
	if path, walked, ok := p.walkForSecret(b, root); ok {
		return true, path, walked
	}
	return inBytes, "", name
}

// walkForSecret decodes b token by token (a stream of values is allowed, for
// JSON Lines) and returns the path of the first key or scalar whose decoded
// text holds a secret, and the secret's name (secretName).
func (p *policy) walkForSecret(b []byte, root string) (path, name string, found bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	w := jsonWalk{root: root}
	for {
		tok, err := dec.Token()
		if err != nil { // io.EOF included: nothing found
			return "", "", false
		}
		switch t := tok.(type) {
		case json.Delim:
			w.delim(t)
			continue
		case string:
			if w.expectKey() {
				if name, ok := p.rawSecretIn(t); ok {
					return w.path("") + " (a member name)", name, true
				}
				w.stack[len(w.stack)-1].key = p.keySegment(t)
				continue
			}
			if name, ok := p.rawSecretIn(t); ok {
				return w.path(""), name, true
			}
		case json.Number:
			if name, ok := p.rawSecretIn(string(t)); ok {
				return w.path(""), name, true
			}
		}
		w.afterValue()
	}
}

// jsonWalk is where a token-by-token walk of JSON is: the containers it is
// in, each with its index or member key.
type jsonWalk struct {
	root  string
	stack []jsonFrame
}

// jsonFrame is one container of a jsonWalk.
type jsonFrame struct {
	array bool
	index int
	key   string // the path segment of the current member; "" before its key
}

// path is the path of the current value: root, each container's index or
// key, then last.
func (w *jsonWalk) path(last string) string {
	var sb strings.Builder
	sb.WriteString(w.root)
	for _, f := range w.stack {
		if f.array {
			sb.WriteString("[" + strconv.Itoa(f.index) + "]")
		} else if f.key != "" {
			sb.WriteString(f.key)
		}
	}
	sb.WriteString(last)
	return sb.String()
}

// delim enters or leaves a container.
func (w *jsonWalk) delim(t json.Delim) {
	switch t {
	case '{':
		w.stack = append(w.stack, jsonFrame{})
	case '[':
		w.stack = append(w.stack, jsonFrame{array: true})
	default:
		w.stack = w.stack[:len(w.stack)-1]
		w.afterValue()
	}
}

// expectKey reports whether the next string is a member name.
func (w *jsonWalk) expectKey() bool {
	return len(w.stack) > 0 && !w.stack[len(w.stack)-1].array && w.stack[len(w.stack)-1].key == ""
}

// afterValue advances the enclosing container past one value.
func (w *jsonWalk) afterValue() {
	if len(w.stack) == 0 {
		return
	}
	top := &w.stack[len(w.stack)-1]
	if top.array {
		top.index++
	} else {
		top.key = ""
	}
}

// keySegment is the path segment of member name k: ".k" when plain, a
// quoted "[…]" otherwise, and "[<redacted>]" when it holds a secret.
func (p *policy) keySegment(k string) string {
	switch {
	case p.containsRawSecret(k) || p.containsSecret([]byte(k)):
		return "[<redacted>]"
	case isPlainKey(k):
		return "." + k
	default:
		return "[" + quoteShort(k) + "]"
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
	if name, ok := p.secretIn([]byte(typ)); ok {
		return secretErrorf("event %s: its type contains %s (value withheld)", what, name)
	}
	if name, ok := p.secretIn([]byte(id)); ok {
		return secretErrorf("event %s (type %q): its id contains %s (value withheld)", what, typ, name)
	}
	for _, b := range [][]byte{canon, raw} {
		if found, path, name := p.secretInJSON(b, "data"); found {
			where := "its data"
			if path != "" {
				where = "field " + path
			}
			return secretErrorf("event %s (type %q): %s contains %s (value withheld)", what, typ, where, name)
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
	for _, sf := range p.forms {
		f := sf.b
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
