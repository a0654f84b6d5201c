package graph

import (
	"fmt"
	"strconv"
	"strings"
)

// Position names the n-th occurrence (1-based) of a node: "dag/<node>/<n>".
func Position(node string, n int) string {
	return "dag/" + node + "/" + strconv.Itoa(n)
}

// InstancePosition names the n-th occurrence of a for_each node's instance
// of key: "dag/<node>[<escaped key>]/<n>" (EscapeKey).
func InstancePosition(node, key string, n int) string {
	return fmt.Sprintf("dag/%s[%s]/%d", node, EscapeKey(key), n)
}

// MemberPosition names the n-th occurrence of a loop member in a round:
// "dag/<loop>/<round>/<member>/<n>".
func MemberPosition(loop string, round int, member string, n int) string {
	return fmt.Sprintf("dag/%s/%d/%s/%d", loop, round, member, n)
}

// EscapeKey makes a for_each key safe inside a position: the letters,
// digits and '.', '_', '-', '~' stay, every other byte of the key's UTF-8
// is written %XX (upper-case hex), as in a URI path segment (RFC 3986
// §2.1). A position is then one line of printable ASCII with no '/', '[',
// ']' or space of its key's, and two keys never share one.
func EscapeKey(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if unreserved(c) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// UnescapeKey reverses EscapeKey. It returns false for text EscapeKey
// cannot have written.
func UnescapeKey(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case unreserved(c):
			b.WriteByte(c)
		case c == '%' && i+2 < len(s) && isUpperHex(s[i+1]) && isUpperHex(s[i+2]):
			v := hexVal(s[i+1])<<4 | hexVal(s[i+2])
			if unreserved(v) {
				return "", false // EscapeKey writes these as they are
			}
			b.WriteByte(v)
			i += 2
		default:
			return "", false
		}
	}
	return b.String(), true
}

func unreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '~'
}

func isUpperHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' }

func hexVal(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'A' + 10
}
