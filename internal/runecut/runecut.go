package runecut

import "unicode/utf8"

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
