package runecut

import (
	"testing"
	"unicode/utf8"
)

func TestPrefix(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abc", 3, "abc"},
		{"abc", 2, "ab"},
		{"abc", 0, ""},
		{"abc", -1, ""},
		{"a日b", 2, "a"}, // 日 is three bytes: the cut backs off to its start
		{"a日b", 3, "a"},
		{"a日b", 4, "a日"},
		{"日", 1, ""},
	} {
		if got := Prefix(tc.s, tc.n); got != tc.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func FuzzPrefix(f *testing.F) {
	f.Add("a日b", 3)
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := Prefix(s, n)
		if len(got) > max(n, 0) && got != s {
			t.Fatalf("Prefix(%q, %d) = %q: longer than the bound", s, n, got)
		}
		if got != s[:len(got)] {
			t.Fatalf("Prefix(%q, %d) = %q: not a prefix", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Prefix(%q, %d) = %q: cut inside a rune", s, n, got)
		}
	})
}

func TestBound(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"dag/a/1", 200, "dag/a/1"},
		{"abcd", 4, "abcd"},
		{"abcde", 4, "abcd… (5 bytes in all)"},
		{"a日b", 2, "a… (5 bytes in all)"}, // the cut backs off to the rune's start
	} {
		if got := Bound(tc.s, tc.n); got != tc.want {
			t.Errorf("Bound(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
