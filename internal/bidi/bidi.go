package bidi

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Range is the code points Lo through Hi, both included.
type Range struct{ Lo, Hi rune }

// Controls are the bidirectional formatting characters: the marks U+061C,
// U+200E and U+200F, the embeddings and overrides U+202A-U+202E and the
// isolates U+2066-U+2069. What follows one is reordered where it is shown,
// so run text holding U+202E could show "invoice\u202eexe.pdf" as
// "invoicefdp.exe" ("Trojan Source", CVE-2021-42574).
var Controls = []Range{{0x061c, 0x061c}, {0x200e, 0x200f}, {0x202a, 0x202e}, {0x2066, 0x2069}}

// IsControl reports whether r is one of Controls.
func IsControl(r rune) bool {
	if r < 0x061c || r > 0x2069 {
		return false
	}
	for _, c := range Controls {
		if r >= c.Lo && r <= c.Hi {
			return true
		}
	}
	return false
}

// Escape returns s with each of Controls written as a \u202e-style escape
// (lower-case hex, four digits), as the command line shows them; the
// rest, bytes that are not UTF-8 too, is left as it is.
func Escape(s string) string {
	if !strings.ContainsFunc(s, IsControl) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if IsControl(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Spec returns Controls as the web UI's pages are given them: hex ranges
// separated by commas, "61c-61c,200e-200f,…".
func Spec() string {
	parts := make([]string, len(Controls))
	for i, c := range Controls {
		parts[i] = fmt.Sprintf("%x-%x", c.Lo, c.Hi)
	}
	return strings.Join(parts, ",")
}
