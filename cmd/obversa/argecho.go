package main

import (
	"errors"
	"fmt"
	"io/fs"

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

// fileFlagErr is the usage error for a file a flag names that cannot be
// read: it names the flag and the file, says what is wrong with it
// without Go's "open" wording, and ends with how to fix it (fix).
func fileFlagErr(flag, file string, err error, fix string) error {
	why := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		why = pe.Err.Error()
	}
	return usageErr(fmt.Errorf("%s %s cannot be read (%s); %s", flag, echoArg(file), why, fix))
}
