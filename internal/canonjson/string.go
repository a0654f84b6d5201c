package canonjson

import "unicode/utf8"

// hexDigits are the lower-case hexadecimal digits RFC 8785 writes \u00xx
// escapes with.
const hexDigits = "0123456789abcdef"

// AppendString appends s to dst as an RFC 8785 string (§3.2.2.2), quotes
// included: '"' and '\' escaped, the control characters U+0000–U+001F as
// \b \t \n \f \r where JSON has a short form and \u00xx (lower-case hex)
// where it has none, everything else as it is in UTF-8. An invalid UTF-8
// byte is written as U+FFFD, as encoding/json writes it, so the result is
// always valid UTF-8; for valid UTF-8 it is what jcs.Transform writes for
// the same string.
func AppendString[S string | []byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\r':
				dst = append(dst, '\\', 'r')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		// At most utf8.UTFMax bytes: the conversion of a []byte needs no
		// allocation, that of a string none at all.
		r, size := utf8.DecodeRuneInString(string(s[i:min(len(s), i+utf8.UTFMax)]))
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
