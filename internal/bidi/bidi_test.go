package bidi

import "testing"

// TestEscape: each bidirectional control is shown as an escape, and
// nothing else changes.
func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"invoice\u202eexe.pdf":             `invoice\u202eexe.pdf`,
		"\u2066a\u2069 \u200e\u200f\u061c": `\u2066a\u2069 \u200e\u200f\u061c`,
		"plain é ü \u2028 \u202f":          "plain é ü \u2028 \u202f",
		"\xff\u202a":                       "\xff\\u202a",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
	n := 0
	for r := rune(0); r <= 0x10ffff; r++ {
		if IsControl(r) {
			n++
		}
	}
	if n != 12 {
		t.Errorf("%d controls, want 12", n)
	}
	if got := Spec(); got != "61c-61c,200e-200f,202a-202e,2066-2069" {
		t.Errorf("Spec() = %q", got)
	}
}
