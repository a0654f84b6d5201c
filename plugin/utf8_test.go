package plugin

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzWireText holds wireText to what encoding/json makes of the same
// text (the record's form): valid UTF-8, unchanged when it was valid, each
// invalid byte U+FFFD.
func FuzzWireText(f *testing.F) {
	for _, s := range []string{"", "plain", "caf\xe9", "\xff\xfe", "\xed\xa0\x80", "é\xc3", "\xf0\x9f\x98"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := wireText(s)
		var want string
		b, err := json.Marshal(s)
		if err != nil || json.Unmarshal(b, &want) != nil {
			t.Fatalf("encoding/json round trip of %q: %v", s, err)
		}
		if got != want || !utf8.ValidString(got) || utf8.ValidString(s) && got != s {
			t.Fatalf("wireText(%q) = %q, encoding/json gives %q", s, got, want)
		}
	})
}
