package plan

import (
	"unicode/utf16"
	"unicode/utf8"
)

// str reads the string at i and returns its value (a part of in when it
// holds no escape); ascii says it holds ASCII only.
func (c *canon) str() (s []byte, ascii, ok bool) {
	start := c.i + 1
	j := start
	ascii = true
	for j < len(c.in) {
		b := c.in[j]
		switch {
		case b == '"':
			raw := c.in[start:j]
			if !ascii && !utf8.Valid(raw) {
				return nil, false, false
			}
			c.i = j + 1
			return raw, ascii, true
		case b == '\\':
			return c.escaped(start)
		case b < 0x20:
			return nil, false, false
		case b >= 0x80:
			ascii = false
		}
		j++
	}
	return nil, false, false
}

// escaped reads the string starting at start (after its quote) that holds
// escapes.
func (c *canon) escaped(start int) ([]byte, bool, bool) {
	var b []byte
	ascii := true
	j := start
	for j < len(c.in) {
		ch := c.in[j]
		switch {
		case ch == '"':
			c.i = j + 1
			if !ascii && !utf8.Valid(b) {
				return nil, false, false
			}
			return b, ascii, true
		case ch < 0x20:
			return nil, false, false
		case ch != '\\':
			if ch >= 0x80 {
				ascii = false
			}
			b = append(b, ch)
			j++
			continue
		}
		if j+1 >= len(c.in) {
			return nil, false, false
		}
		esc := c.in[j+1]
		j += 2
		switch esc {
		case '"', '\\', '/':
			b = append(b, esc)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := hex4(c.in, j)
			if !ok {
				return nil, false, false
			}
			j += 4
			if utf16.IsSurrogate(r) {
				if r > 0xDBFF || j+6 > len(c.in) || c.in[j] != '\\' || c.in[j+1] != 'u' {
					return nil, false, false
				}
				lo, ok := hex4(c.in, j+2)
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return nil, false, false
				}
				j += 6
				r = utf16.DecodeRune(r, lo)
			}
			if r >= 0x80 {
				ascii = false
			}
			b = utf8.AppendRune(b, r)
		default:
			return nil, false, false
		}
	}
	return nil, false, false
}

// hex4 reads the four hexadecimal digits at in[j:].
func hex4(in []byte, j int) (rune, bool) {
	if j+4 > len(in) {
		return 0, false
	}
	var r rune
	for _, h := range in[j : j+4] {
		var v byte
		switch {
		case h >= '0' && h <= '9':
			v = h - '0'
		case h >= 'a' && h <= 'f':
			v = h - 'a' + 10
		case h >= 'A' && h <= 'F':
			v = h - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}
