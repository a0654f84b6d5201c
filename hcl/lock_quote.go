package hcl

import (
	"strconv"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// quoteHCL returns s as an HCL quoted string literal that reads back as s
// in Unicode NFC (HCL normalises string literals so): backslash, quote,
// newline, carriage return and tab escaped, the template introducers "${"
// and "%{" escaped by doubling their first character, and other
// characters that are not printable as \uNNNN or \UNNNNNNNN — what
// hclwrite writes for a string value.
func quoteHCL(s string) string {
	s = norm.NFC.String(s)
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i, r := range s {
		switch r {
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '$', '%':
			b = append(b, byte(r))
			if i+1 < len(s) && s[i+1] == '{' {
				b = append(b, byte(r))
			}
		default:
			b = appendPrintable(b, r)
		}
	}
	return string(append(b, '"'))
}

// appendPrintable appends r, or its \u or \U escape when it is not
// printable.
func appendPrintable(b []byte, r rune) []byte {
	switch {
	case unicode.IsPrint(r):
		return utf8.AppendRune(b, r)
	case r < 1<<16:
		return append(b, pad(`\u`, r, 4)...)
	default:
		return append(b, pad(`\U`, r, 8)...)
	}
}

// pad returns prefix and r in lower-case hex, zero-padded to n digits.
func pad(prefix string, r rune, n int) string {
	h := strconv.FormatInt(int64(r), 16)
	for len(h) < n {
		h = "0" + h
	}
	return prefix + h
}
