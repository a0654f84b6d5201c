package shellquote

import "strings"

// Quote returns s as one word of a POSIX shell command (sh, bash, dash,
// zsh): s itself when it is not empty and holds only letters, digits and
// -_./:@%+=, (and does not start with '=', which zsh expands), otherwise
// s in single quotes, where each single quote of s closes the quoted
// text, follows as \' and opens it again. The shell reads the result
// back as exactly s: nothing in single quotes is expanded.
//
// An s holding a control character other than tab and line feed (ESC,
// DEL, ...) is written in ANSI-C quotes instead, $'...' with each such
// byte, each backslash and each single quote escaped (\x1b, \\, \'):
// a terminal shows such a byte as an escape, never as itself, so a
// single-quoted copy of what it shows names another word. bash, zsh and
// ksh read $'...' (POSIX.1-2024 sh too; older dash does not).
func Quote(s string) string {
	if plain(s) {
		return s
	}
	if strings.IndexFunc(s, control) >= 0 {
		return ansiC(s)
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// control reports whether r is a control character a terminal does not
// show as itself in a copy-paste command: C0 but tab and line feed, DEL.
func control(r rune) bool { return (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f }

// ansiC is s as one $'...' word: control bytes, backslashes and single
// quotes escaped, everything else as it is.
func ansiC(s string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			const hex = "0123456789abcdef"
			b.WriteString(`\x`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// Join quotes each word and joins them with spaces: a whole command.
func Join(words ...string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = Quote(w)
	}
	return strings.Join(q, " ")
}

// plain reports whether s needs no quoting.
func plain(s string) bool {
	if s == "" || s[0] == '=' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_./:@%+=,", c) >= 0) {
			return false
		}
	}
	return true
}
