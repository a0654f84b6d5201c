package stream

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// appendLine appends l as json.Marshal writes it, without the newline,
// and reports whether it could: a line with tool JSON (which
// encoding/json checks and compacts) or a time outside years 0–9999 is
// left to json.Marshal. Every streamed event of every engine call is one
// line, and reflection was most of what writing one cost;
// FuzzAppendLine holds the output to json.Marshal's, byte for byte.
func appendLine(dst []byte, l Line) ([]byte, bool) {
	if l.JSON != nil || l.TS.Year() < 0 || l.TS.Year() > 9999 {
		return dst, false
	}
	dst = append(dst, `{"ts":"`...)
	dst = l.TS.AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","node":`...)
	dst = appendString(dst, l.Node)
	dst = append(dst, `,"position":`...)
	dst = appendString(dst, l.Position)
	if l.Call != 0 {
		dst = append(dst, `,"call":`...)
		dst = strconv.AppendInt(dst, int64(l.Call), 10)
	}
	dst = append(dst, `,"kind":`...)
	dst = appendString(dst, l.Kind)
	if l.Text != "" {
		dst = append(dst, `,"text":`...)
		dst = appendString(dst, l.Text)
	}
	if l.Tool != "" {
		dst = append(dst, `,"tool":`...)
		dst = appendString(dst, l.Tool)
	}
	if l.ToolID != "" {
		dst = append(dst, `,"tool_id":`...)
		dst = appendString(dst, l.ToolID)
	}
	if u := l.Usage; u != nil {
		dst = append(dst, `,"usage":{"known":`...)
		dst = strconv.AppendBool(dst, u.Known)
		dst = appendCount(dst, `,"input":`, u.Input)
		dst = appendCount(dst, `,"output":`, u.Output)
		dst = appendCount(dst, `,"cache_read":`, u.CacheRead)
		dst = appendCount(dst, `,"cache_creation":`, u.CacheCreation)
		dst = append(dst, '}')
	}
	dst = appendCount(dst, `,"dropped":`, l.Dropped)
	return append(dst, '}'), true
}

// appendCount appends an omitempty integer member.
func appendCount(dst []byte, name string, n int64) []byte {
	if n == 0 {
		return dst
	}
	return strconv.AppendInt(append(dst, name...), n, 10)
}

// shortEscapes are the two-character escapes encoding/json writes for
// control characters, by character; 0 for \u00xx.
var shortEscapes = [0x20]byte{'\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't'}

// appendString appends s as a JSON string the way encoding/json does by
// default: '<', '>' and '&' escaped for HTML, U+2028 and U+2029 escaped,
// invalid UTF-8 replaced by U+FFFD.
func appendString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch e := shortEscapes[c&0x1f]; {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c < 0x20 && e != 0:
				dst = append(dst, '\\', e)
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(dst, s[start:]...), '"')
}
