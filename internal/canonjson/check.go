package canonjson

import (
	"strconv"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// maxCanonDepth mirrors the nesting limit of the JCS library, so that the
// checker and the library agree on what is canonical.
const maxCanonDepth = 10000

// isCanonicalJSON reports whether b is exactly the RFC 8785 canonical form
// of some JSON value — equivalently, whether jcs.Transform(b) succeeds and
// returns b. It is a one-pass, allocation-free check used when reading:
// canonicalising every line with the library would dominate the cost of
// opening a large stream. A differential fuzz test (FuzzCanonicalCheck)
// holds it to the library's answer. Numbers are checked by formatting them
// with the library (jcs.NumberToJSON).
func isCanonicalJSON(b []byte) bool {
	c := canonChecker{b: b}
	if !c.value(0) {
		return false
	}
	return c.i == len(b)
}

type canonChecker struct {
	b []byte
	i int
}

func (c *canonChecker) value(depth int) bool {
	if c.i >= len(c.b) {
		return false
	}
	switch c.b[c.i] {
	case '{':
		return c.object(depth + 1)
	case '[':
		return c.array(depth + 1)
	case '"':
		_, ok := c.str()
		return ok
	case 't':
		return c.literal("true")
	case 'f':
		return c.literal("false")
	case 'n':
		return c.literal("null")
	default:
		return c.number()
	}
}

func (c *canonChecker) literal(lit string) bool {
	if len(c.b)-c.i < len(lit) || string(c.b[c.i:c.i+len(lit)]) != lit {
		return false
	}
	c.i += len(lit)
	return c.i == len(c.b) || isDelim(c.b[c.i])
}

func isDelim(ch byte) bool { return ch == ',' || ch == ']' || ch == '}' }

func (c *canonChecker) number() bool {
	start := c.i
	for c.i < len(c.b) && isNumberByte(c.b[c.i]) {
		c.i++
	}
	tok := c.b[start:c.i]
	if len(tok) == 0 || (c.i < len(c.b) && !isDelim(c.b[c.i])) {
		return false
	}
	if isSmallInt(tok) {
		return true
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return false
	}
	canon, err := jcs.NumberToJSON(f)
	return err == nil && canon == string(tok)
}

// str checks a string at c.b[c.i] (the opening quote) and returns its body
// (between the quotes, escapes not decoded).
func (c *canonChecker) str() ([]byte, bool) {
	c.i++
	start := c.i
	for c.i < len(c.b) {
		ch := c.b[c.i]
		switch {
		case ch == '"':
			body := c.b[start:c.i]
			c.i++
			return body, true
		case ch < 0x20:
			return nil, false
		case ch == '\\':
			if c.i+1 >= len(c.b) {
				return nil, false
			}
			switch c.b[c.i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				c.i += 2
			case 'u':
				// Only control characters without a short form use \u00xx,
				// in lower-case hex.
				if c.i+6 > len(c.b) || c.b[c.i+2] != '0' || c.b[c.i+3] != '0' {
					return nil, false
				}
				hi, lo := c.b[c.i+4], c.b[c.i+5]
				if hi != '0' && hi != '1' || !(lo >= '0' && lo <= '9' || lo >= 'a' && lo <= 'f') {
					return nil, false
				}
				v := hexVal(hi)<<4 | hexVal(lo)
				if v == '\b' || v == '\t' || v == '\n' || v == '\f' || v == '\r' {
					return nil, false
				}
				c.i += 6
			default:
				return nil, false
			}
		case ch < 0x80:
			c.i++
		default:
			r, n := utf8.DecodeRune(c.b[c.i:])
			if r == utf8.RuneError && n <= 1 {
				return nil, false
			}
			c.i += n
		}
	}
	return nil, false
}

func hexVal(ch byte) byte {
	if ch <= '9' {
		return ch - '0'
	}
	return ch - 'a' + 10
}

func (c *canonChecker) array(depth int) bool {
	if depth > maxCanonDepth {
		return false
	}
	c.i++ // [
	if c.i < len(c.b) && c.b[c.i] == ']' {
		c.i++
		return true
	}
	for {
		if !c.value(depth) {
			return false
		}
		if more, ok := c.sep(']'); !ok || !more {
			return ok
		}
	}
}

func (c *canonChecker) object(depth int) bool {
	if depth > maxCanonDepth {
		return false
	}
	c.i++ // {
	if c.i < len(c.b) && c.b[c.i] == '}' {
		c.i++
		return true
	}
	var prev []byte
	first := true
	for {
		if c.i >= len(c.b) || c.b[c.i] != '"' {
			return false
		}
		key, ok := c.str()
		if !ok {
			return false
		}
		// Members must be sorted by their names' UTF-16 code units, with
		// no duplicates (RFC 8785 §3.2.3).
		if !first && compareKeys(prev, key) >= 0 {
			return false
		}
		prev, first = key, false
		if c.i >= len(c.b) || c.b[c.i] != ':' {
			return false
		}
		c.i++
		if !c.value(depth) {
			return false
		}
		if more, ok := c.sep('}'); !ok || !more {
			return ok
		}
	}
}

// compareKeys compares two canonical string bodies by the UTF-16 code units
// of the strings they denote.
func compareKeys(a, b []byte) int {
	// Plain ASCII (no escape) orders the same as its UTF-16 code units:
	// compare bytes until the names differ or something else turns up.
	for len(a) > 0 && len(b) > 0 {
		ca, cb := a[0], b[0]
		if ca >= 0x80 || cb >= 0x80 || ca == '\\' || cb == '\\' {
			break
		}
		if ca != cb {
			return int(ca) - int(cb)
		}
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 {
		ra, na := keyRune(a)
		rb, nb := keyRune(b)
		if ra != rb {
			ka, kb := utf16First(ra), utf16First(rb)
			if ka != kb {
				return int(ka) - int(kb)
			}
			return int(ra) - int(rb) // same high surrogate: code point order
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// keyRune decodes one character of a canonical string body, resolving its
// escapes.
func keyRune(s []byte) (rune, int) {
	if s[0] == '\\' {
		switch s[1] {
		case 'b':
			return '\b', 2
		case 'f':
			return '\f', 2
		case 'n':
			return '\n', 2
		case 'r':
			return '\r', 2
		case 't':
			return '\t', 2
		case 'u':
			return rune(hexVal(s[4])<<4 | hexVal(s[5])), 6
		default: // '"' or '\\'
			return rune(s[1]), 2
		}
	}
	if s[0] < 0x80 {
		return rune(s[0]), 1
	}
	return utf8.DecodeRune(s)
}

// utf16First is the first UTF-16 code unit of r.
func utf16First(r rune) rune {
	if r >= 0x10000 {
		return 0xD800 + (r-0x10000)>>10
	}
	return r
}

// sep reads the separator after an element or member: ',' (more follows)
// or end, which closes the container. ok is false for anything else.
func (c *canonChecker) sep(end byte) (more, ok bool) {
	if c.i >= len(c.b) {
		return false, false
	}
	switch c.b[c.i] {
	case ',':
		c.i++
		return true, true
	case end:
		c.i++
		return false, true
	}
	return false, false
}
