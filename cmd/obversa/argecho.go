package main

import (
	"fmt"

	"github.com/obversa/obversa/internal/runecut"
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
	return fmt.Sprintf("%q… (%d bytes in all)", runecut.Prefix(s, maxEchoBytes), len(s))
}
