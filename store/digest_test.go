package store

import (
	"crypto/sha256"
	"strings"
	"testing"
)

// TestParseDigest: parseDigest takes back what digestString writes and
// refuses every other form: upper-case or non-hex digits, another prefix
// or length.
func TestParseDigest(t *testing.T) {
	for _, in := range []string{"", "a", "b", "event 2"} {
		sum := sha256.Sum256([]byte(in))
		got, ok := parseDigest([]byte(digestString(sum)))
		if !ok || got != sum {
			t.Fatalf("%q: parseDigest(digestString) = %x, %v", in, got, ok)
		}
	}
	good := digestString(sha256.Sum256([]byte("x")))
	bad := []string{
		"",
		good[:len(good)-1],
		good + "0",
		"sha512:" + good[len(digestPrefix):],
		strings.ToUpper(good),
		good[:len(digestPrefix)] + strings.ToUpper(good[len(digestPrefix):]),
	}
	for i := len(digestPrefix); i < len(good); i++ {
		for _, c := range []byte{'g', 'G', 'A', 'F', '/', ':', '`', '@', ' ', 0, 0xff} {
			b := []byte(good)
			b[i] = c
			bad = append(bad, string(b))
		}
	}
	for _, s := range bad {
		if sum, ok := parseDigest([]byte(s)); ok || sum != [32]byte{} {
			t.Errorf("parseDigest(%q) = %x, %v; want a refusal", s, sum, ok)
		}
	}
}
