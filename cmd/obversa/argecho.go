package main

import (
	"fmt"
	"unicode/utf8"
)

// maxEchoBytes bounds how much of an operator's value an error quotes
// back: enough to recognise it, not a screenful of a pasted document.
const maxEchoBytes = 200

// echoArg is s quoted for an error message (Go syntax, so control
// characters are escaped), cut to maxEchoBytes at a rune boundary with the
// value's whole length in bytes after the cut.
func echoArg(s string) string {
	if len(s) <= maxEchoBytes {
		return fmt.Sprintf("%q", s)
	}
	cut := maxEchoBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes in all)", s[:cut], len(s))
}
