package runecut

import (
	"fmt"
	"unicode/utf8"
)

// Prefix returns the longest prefix of s that is at most n bytes long and
// does not end inside a UTF-8 sequence, so that text cut to a size bound
// (an error message, a recorded message, a plugin's diagnostic) stays
// valid UTF-8 wherever s was. s itself is returned when it fits; n <= 0
// gives "".
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Bound returns s when it is at most n bytes long, else its Prefix of n
// bytes followed by "… (L bytes in all)" (L = len(s)), so that a value an
// operator typed is echoed in an error recognisably but never whole: a
// pasted document must not become a screenful of error.
func Bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes in all)", Prefix(s, n), len(s))
}

// EchoBytes bounds how much of an operator's value an error quotes back
// (bytes): enough to recognise it, not a screenful of a pasted document.
// The command line and the host use the same bound.
const EchoBytes = 200
