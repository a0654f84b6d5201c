package idname

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// MaxLen is the longest id, in bytes.
const MaxLen = 128

// letters are the transliterations of Latin letters that no Unicode
// decomposition splits into an ASCII letter and marks.
var letters = map[rune]string{
	'ß': "ss", 'ẞ': "SS", 'æ': "ae", 'Æ': "AE", 'œ': "oe", 'Œ': "OE", 'ø': "o", 'Ø': "O",
	'đ': "d", 'Đ': "D", 'ð': "d", 'Ð': "D", 'ł': "l", 'Ł': "L", 'þ': "th", 'Þ': "Th", 'ı': "i", 'ħ': "h", 'Ħ': "H",
}

// Suggest returns a valid id close to s: letters with accents lose them
// (dräft becomes draft), a few Latin letters are written out (ß as ss),
// and any other run of characters the grammar refuses (spaces, symbols,
// other scripts) becomes one '-'. The id starts with a letter or digit,
// never ends with or holds two separators in a row ('.', '_', '-') and is
// at most MaxLen bytes. When nothing of s is left, it returns fallback.
func Suggest(s, fallback string) string {
	b := make([]byte, 0, len(s))
	sep := func(c byte) {
		if len(b) > 0 && !isSep(b[len(b)-1]) {
			b = append(b, c)
		}
	}
	for _, r := range norm.NFKD.String(s) {
		switch {
		case r < 0x80 && isAlnum(byte(r)):
			b = append(b, byte(r))
		case r == '.' || r == '_' || r == '-':
			sep(byte(r))
		case unicode.Is(unicode.Mn, r):
			// An accent split off its letter: dropped.
		case letters[r] != "":
			b = append(b, letters[r]...)
		default:
			sep('-')
		}
		if len(b) > MaxLen {
			break
		}
	}
	out := strings.TrimRight(string(b[:min(len(b), MaxLen)]), "._-")
	if out == "" {
		return fallback
	}
	return out
}

func isSep(c byte) bool { return c == '.' || c == '_' || c == '-' }

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
