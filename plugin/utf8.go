package plugin

import (
	"strings"
	"unicode/utf8"
)

// wireText returns s for a protobuf string field: s itself when it is
// UTF-8, else s with each invalid byte replaced by U+FFFD, as
// encoding/json writes it. Protobuf refuses to marshal a string field that
// is not UTF-8, and a Send that fails to marshal ends the call, so an
// engine answer holding such bytes (a CLI printing Latin-1) never reached
// the host, which saw a call broken off instead of the answer.
func wireText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD") // one per byte, as encoding/json writes it
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// wireTexts is wireText of each of ss, in a new slice.
func wireTexts(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = wireText(s)
	}
	return out
}
