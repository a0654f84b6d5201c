package main

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// lineText is a value a plugin or a plugin's release chose (a file name
// of its archive, the name or version its Describe gives) as one line of
// our output shows it: as it is when it is printable text, quoted with
// Go's escapes otherwise. termText lets line feeds and tabs through, for
// text that is meant to span lines; a value that must stay on its line
// must not start one of its own, such as a forged "signature verified:
// key …" or "sha256: …" line.
func lineText(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) || !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	return s
}
