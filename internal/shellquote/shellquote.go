package shellquote

import (
	"strconv"
	"strings"
)

// Quote returns s as one word of a POSIX shell command (sh, bash, dash,
// zsh): s itself when it is not empty and holds only letters, digits and
// -_./:@%+=, (and does not start with '=', which zsh expands), otherwise
// s in single quotes, where each single quote of s closes the quoted
// text, follows as \' and opens it again. The shell reads the result
// back as exactly s: nothing in single quotes is expanded.
//
// An s holding a control character other than tab and line feed (ESC,
// DEL, ...) keeps each run of such bytes out of the quotes and writes it
// as "$(printf '\033')", octal escapes of printf's format: a terminal
// shows such a byte as an escape, never as itself, so a single-quoted copy
// of what it shows names another word. Every POSIX shell reads that form
// (dash too, which does not read bash's $'...').
func Quote(s string) string {
	if plain(s) {
		return s
	}
	if strings.IndexFunc(s, control) < 0 {
		return single(s)
	}
	var b strings.Builder
	for s != "" {
		i := strings.IndexFunc(s, control)
		if i < 0 {
			i = len(s)
		}
		if i > 0 {
			b.WriteString(single(s[:i]))
			s = s[i:]
			continue
		}
		b.WriteString(`"$(printf '`)
		for s != "" && control(rune(s[0])) {
			b.WriteString(`\`)
			b.WriteString(strconv.FormatUint(uint64(s[0])|0o1000, 8)[1:])
			s = s[1:]
		}
		b.WriteString(`')"`)
	}
	return b.String()
}

// single is s in single quotes, where each single quote of s closes the
// quoted text, follows as \' and opens it again.
func single(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// control reports whether r is a control character a terminal does not
// show as itself in a copy-paste command: C0 but tab and line feed, DEL.
func control(r rune) bool { return (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f }

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
