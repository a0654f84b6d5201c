package main

import (
	"fmt"

	"github.com/obversa/obversa/internal/runecut"
)

// maxEchoBytes bounds how much of an operator's value an error quotes
// back (runecut.EchoBytes, which the host's messages use too).
const maxEchoBytes = runecut.EchoBytes

// echoArg is s quoted for an error message (Go syntax, so control
// characters are escaped), cut to maxEchoBytes at a rune boundary with the
// value's whole length in bytes after the cut.
func echoArg(s string) string {
	if len(s) <= maxEchoBytes {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q… (%d bytes in all)", runecut.Prefix(s, maxEchoBytes), len(s))
}
