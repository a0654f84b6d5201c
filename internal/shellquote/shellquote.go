package shellquote

import "strings"

// Quote returns s as one word of a POSIX shell command (sh, bash, dash,
// zsh): s itself when it is not empty and holds only letters, digits and
// -_./:@%+=, (and does not start with '=', which zsh expands), otherwise
// s in single quotes, where each single quote of s closes the quoted
// text, follows as \' and opens it again. The shell reads the result
// back as exactly s: nothing in single quotes is expanded.
func Quote(s string) string {
	if plain(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
