package canonjson

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// library returns what github.com/gowebpki/jcs, the RFC 8785
// implementation the store canonicalises with, writes for s:
// encoding/json quotes s (invalid UTF-8 as U+FFFD) and jcs.Transform
// rewrites that string canonically.
func library(t testing.TB, s string) string {
	t.Helper()
	in, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jcs.Transform(in)
	if err != nil {
		t.Fatalf("jcs.Transform(%s): %v", in, err)
	}
	return string(out)
}

// TestAppendStringMatchesLibrary holds AppendString to the library for
// every ASCII character alone and between others, and for strings past
// ASCII, invalid UTF-8 among them.
func TestAppendStringMatchesLibrary(t *testing.T) {
	t.Parallel()
	var cases []string
	for c := 0; c < utf8.RuneSelf; c++ {
		cases = append(cases, string(rune(c)), "a"+string(rune(c))+"b")
	}
	cases = append(cases, "", "é", "€", "😀", "\u2028\u2029", "\u007f", "<>&", `a"b\c`,
		"\xff", "a\xc3", "\xe2\x82", "ok\xf0\x9f\x98", "\xed\xa0\x80", "mixed \x01é\xfe\n")
	for _, s := range cases {
		want := library(t, s)
		if got := string(AppendString(nil, s)); got != want {
			t.Errorf("%q: AppendString %s, library %s", s, got, want)
		}
		if got := string(AppendString(nil, []byte(s))); got != want {
			t.Errorf("%q: AppendString of bytes %s, library %s", s, got, want)
		}
	}
}

// TestAppendStringAppends checks that what dst held stays in front.
func TestAppendStringAppends(t *testing.T) {
	t.Parallel()
	if got := string(AppendString([]byte("x:"), "a\tb")); got != `x:"a\tb"` {
		t.Errorf("AppendString after x: = %s", got)
	}
}

// FuzzAppendString holds AppendString, of a string and of its bytes, to
// the library for any input, and its output to valid JSON whose value is
// the input with invalid UTF-8 replaced.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c", "\x00\x1f\x7f", "\b\f\n\r\t", "é€😀", "\xff\xfe", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString(nil, s)
		if want := library(t, s); string(got) != want {
			t.Fatalf("%q: AppendString %s, library %s", s, got, want)
		}
		if b := AppendString(nil, []byte(s)); !bytes.Equal(b, got) {
			t.Fatalf("%q: AppendString of bytes %s, of the string %s", s, b, got)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q: %s is not JSON: %v", s, got, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("%q: %s reads back as %q", s, got, back)
		}
	})
}
